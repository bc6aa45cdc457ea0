/**
 * The message of the error a shard raises for a write to a panel that is switching shards
 * (decision 0031): the write changed nothing and may be made again in a few seconds.
 */
export const PANEL_MOVING_MARK = "panel_moving: the panel is switching databases";

export function isPanelMovingError(error: unknown): boolean {
  const message = error instanceof Error ? `${error.message} ${error.cause instanceof Error ? error.cause.message : ""}` : String(error);
  return message.includes(PANEL_MOVING_MARK);
}

const listeners: Array<() => void> = [];

/** Work to do when a write met a switching panel's fence: the isolate's cached directory entries go. */
export function onPanelMoving(listener: () => void): void {
  listeners.push(listener);
}

export function panelMovingMet(): void {
  for (const listener of listeners) listener();
}
