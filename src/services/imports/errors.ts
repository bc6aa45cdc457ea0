/** The job cannot succeed (a 404, a bad header, a file too large): it fails with this reason. */
export class ImportFailure extends Error {}

/**
 * Worth another try (a 503, a timeout): the attempt is counted and the message retried; after
 * MAX_IMPORT_ATTEMPTS in a row the job fails with this reason.
 */
export class TransientImportError extends Error {}
