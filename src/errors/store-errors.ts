// What a store says when it fails. No HTTP meaning here: the HTTP layer maps these to catalogue codes
// (STORE_UNAVAILABLE, STORE_COMMIT_UNKNOWN); the CLI reports the driver's own words (the cause).

/** The store could not take or answer a request; nothing was committed. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  constructor(cause?: unknown, message = 'the store is unavailable; nothing was committed') {
    super(message, { cause });
  }
}

/** The store cannot be made or opened where its URL says (a folder, a file): a setting to change, not a passing failure. */
export class StorePathError extends Error {
  override name = 'StorePathError';
}

/**
 * The connection broke after COMMIT was sent and before its answer came back (a networked store): the
 * transaction may have committed.
 */
export class CommitOutcomeUnknownError extends StoreUnavailableError {
  override name = 'CommitOutcomeUnknownError';
  constructor(cause?: unknown) {
    super(cause, 'the connection was lost while committing; the commit may or may not have happened');
  }
}

/** The store's failure as is; anything else (a driver's error) as a StoreUnavailableError around it. */
export function asStoreError(err: unknown): StoreUnavailableError {
  return err instanceof StoreUnavailableError ? err : new StoreUnavailableError(err);
}
