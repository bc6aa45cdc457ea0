/**
 * What a push service answered for one device. `gone`: the subscription or token no longer
 * exists (web push 404/410, FCM UNREGISTERED); it is removed and never tried again.
 */
export type PushDelivery = { ok: true; id: string } | { ok: false; gone: boolean; retryable: boolean; error: string };
