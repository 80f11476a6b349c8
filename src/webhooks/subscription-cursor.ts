// A subscription's place in the event log and what becomes of its deliveries, for every engine. Engines read
// the log's end (and the row) in their transaction, ask these rules, and write what they decided.
// - A new subscription receives the events placed after it was made: its cursor starts at the log's end.
// - A re-enabled one is not sent the events placed while it was disabled: it starts again from the log's end,
//   ready to fan out. Enabling one that is not disabled changes nothing.
// - Deleting a subscription (or disabling it on 410 Gone) cancels what was still to be sent; deliveries and
//   attempts stay as history.

/** A position in the event log, as the engine's driver reads it. */
export type LogPosition = number | bigint;

/** The fan-out cursor of a new subscription. */
export function newSubscriptionCursor(logEnd: LogPosition): LogPosition {
  return logEnd;
}

/** What enabling writes on the subscription's row. */
export interface Enabling {
  fannedThrough: LogPosition;
  fanOutReady: true;
}

/** What enabling writes, or undefined when the subscription is not disabled. */
export function enabling(state: { disabled: boolean }, logEnd: LogPosition): Enabling | undefined {
  return state.disabled ? { fannedThrough: logEnd, fanOutReady: true } : undefined;
}

/** What a pending delivery of a deleted (or gone) subscription becomes: no next attempt, no lease. */
export const CANCELLED = { status: 'cancelled', nextAttemptAt: null } as const;
