// The two signals of an import step (docs/architecture.md, errors at the service boundary). Both
// are exceptions on purpose and stay inside src/services/imports (dependency-cruiser
// `import-signals-stay-in-imports`): they are raised deep inside streamed downloads and CSV
// reads, where no value can be returned, and no caller outside the folder ever sees one. What
// the import's owner sees is the job: its status, reason, report, summary email and callback.

/**
 * The job cannot succeed (a 404, a bad header, a file too large): the import's expected
 * failure. runImportStep catches it and ends the job as failed with this reason, in the same
 * step; it never reaches the queue.
 */
export class ImportFailure extends Error {}

/**
 * Worth another try (a 503, a timeout): a queue-retry signal. It passes the step and reaches the
 * IMPORTS consumer, which counts the attempt and retries the message, as it does for an
 * unexpected fault (D1 or R2 failing); after MAX_IMPORT_ATTEMPTS in a row the job fails with
 * this reason instead of the generic one.
 */
export class TransientImportError extends Error {}
