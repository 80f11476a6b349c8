// A delivery's attempts: each one's request and answer, and the chart of attempts per minute. The receiver's answer
// is untrusted text: JSX renders it as text only.
import { useMemo } from 'preact/hooks';
import type { WebhookDelivery } from '@plant-store/client';
import { TimeChart } from './chart.js';
import { when } from './webhook-time.js';

type Attempt = WebhookDelivery['attempts'][number];

/** Headers as the lines of an HTTP message, one `name: value` a line. */
function headerLines(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
}

/** One attempt of a delivery: when, its status code or error, how long, and the request and answer recorded. */
export function AttemptDetail({ attempt: a, n }: { attempt: Attempt; n: number }) {
  return (
    <li>
      <h4>
        Attempt {n} at {when(a.at)}
      </h4>
      <dl class="facts">
        <dt>Status code</dt>
        <dd>{a.statusCode ?? 'no answer'}</dd>
        {a.error && (
          <>
            <dt>Error</dt>
            <dd class="wrap">{a.error}</dd>
          </>
        )}
        <dt>Duration</dt>
        <dd>{a.durationMs} ms</dd>
      </dl>
      {a.request ? (
        <>
          <h5>Request headers</h5>
          <pre class="wrap">{headerLines(a.request.headers)}</pre>
          <h5>Request body</h5>
          <pre class="wrap">{a.request.body}</pre>
        </>
      ) : (
        <p>No request recorded: nothing was sent, or the attempt is older than this record.</p>
      )}
      {a.response ? (
        <>
          <h5>Answer headers</h5>
          <pre class="wrap">{headerLines(a.response.headers)}</pre>
          <h5>Answer excerpt{a.response.truncated ? ' (cut: the answer went on)' : ''}</h5>
          <pre class="wrap">{a.response.excerpt}</pre>
        </>
      ) : (
        <p>No answer recorded.</p>
      )}
    </li>
  );
}

/** Attempts that succeeded (2xx) and failed per minute over the last hour, from the deliveries loaded. */
export function AttemptsChart({ deliveries }: { deliveries: WebhookDelivery[] }) {
  const { times, succeeded, failed, totals } = useMemo(() => {
    const end = Math.floor(Date.now() / 60_000) + 1;
    const start = end - 60;
    const times = Array.from({ length: 60 }, (_, i) => (start + i) * 60);
    const succeeded = new Array<number>(60).fill(0);
    const failed = new Array<number>(60).fill(0);
    for (const d of deliveries) {
      for (const a of d.attempts) {
        const minute = Math.floor(Date.parse(a.at) / 60_000) - start;
        if (minute < 0 || minute >= 60) continue;
        const ok = a.statusCode !== undefined && a.statusCode >= 200 && a.statusCode <= 299;
        const counts = ok ? succeeded : failed;
        counts[minute] = (counts[minute] ?? 0) + 1;
      }
    }
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    return { times, succeeded, failed, totals: { succeeded: sum(succeeded), failed: sum(failed) } };
  }, [deliveries]);
  const series = useMemo(
    () => [
      { label: 'Succeeded', values: succeeded, color: '#1b7f3b' },
      { label: 'Failed', values: failed, color: '#b00020' },
    ],
    [succeeded, failed],
  );
  return (
    <>
      <TimeChart title="Delivery attempts per minute, last hour" times={times} series={series} />
      <p>
        Attempts in the last hour, of the deliveries shown: {totals.succeeded} succeeded, {totals.failed} failed.
      </p>
    </>
  );
}
