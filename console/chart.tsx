// A time-series chart drawn by uPlot on a canvas. A canvas says nothing to a screen reader, so the figure carries
// a caption and the latest value of each series as text.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series {
  label: string;
  /** One value per time of `times`; null where there is none. */
  values: (number | null)[];
  color: string;
  /** How a value reads in the caption, e.g. (v) => `${v} ms`. */
  format?: (v: number) => string;
}

/** `times` in seconds since 1970, as uPlot reads them. */
export function TimeChart(props: { title: string; times: number[]; series: Series[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = props.series.map((s) => s.label).join('\u0000');

  useEffect(() => {
    const el = box.current!;
    const chart = new uPlot(
      {
        width: el.clientWidth || 320,
        height: props.height ?? 180,
        legend: { show: true },
        scales: { x: { time: true } },
        series: [{}, ...props.series.map((s) => ({ label: s.label, stroke: s.color, width: 2, value: (_u: uPlot, v: number | null) => (v == null ? '–' : (s.format ?? String)(v)) }))],
        axes: [{}, { size: 60 }],
      },
      [props.times, ...props.series.map((s) => s.values)] as uPlot.AlignedData,
      el,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() => chart.setSize({ width: el.clientWidth || 320, height: props.height ?? 180 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData([props.times, ...props.series.map((s) => s.values)] as uPlot.AlignedData);
  }, [props.times, props.series]);

  const latest = props.series.map((s) => {
    const v = [...s.values].reverse().find((x) => x != null);
    return `${s.label}: ${v == null ? 'none yet' : (s.format ?? String)(v)}`;
  });
  return (
    <figure class="chart">
      <figcaption>
        <strong>{props.title}</strong> <span class="latest">{latest.join('; ')}</span>
      </figcaption>
      <div ref={box} aria-hidden="true" />
    </figure>
  );
}
