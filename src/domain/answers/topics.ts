// The admin API's answers about a panel's topics (issue 45, item 4).
import { z } from "../../lib/z";
import { isoInstant } from "./panels";

export const topicAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  created_at: isoInstant,
  updated_at: isoInstant,
});
export const topicListAnswer = z.strictObject({ topics: z.array(topicAnswer) });
export const topicDeletedAnswer = z.strictObject({ deleted: z.literal(true) });
