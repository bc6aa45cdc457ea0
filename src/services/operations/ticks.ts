import { recordCronTick, type CronTick } from "../../store/operations";

/** Records the tick; a failure is logged, never thrown: the tick's work is done by then. */
export async function recordTick(env: Env, tick: CronTick): Promise<void> {
  try {
    await recordCronTick(env.DB, tick);
  } catch (error) {
    console.error("cron: the tick could not be recorded", error);
  }
}
