import { z } from "../lib/z";
import { freeText, nameText } from "./fields";

/**
 * Topics (issue 45, item 4): a panel's subscription groups. Every contact is in every topic
 * until they leave one on the preference page; a campaign naming a topic skips those who left.
 */

/** POST and PUT /panels/{panel}/topics. */
export const topicBody = z
  .strictObject({
    name: nameText(100).meta({ description: "The topic's name, unique in the panel (whatever the case); shown on the preference page" }),
    description: freeText(500)
      .transform((text) => text.trim())
      .default("")
      .meta({ description: "What the topic's messages are about; shown under its name on the preference page" }),
  });
export type TopicBody = z.output<typeof topicBody>;

/** What a send skipped for a left topic records as the message's error. */
export const TOPIC_SKIP = "left the campaign's topic";

/** What a journey message skipped for a left topic records as its error. */
export const JOURNEY_TOPIC_SKIP = "left the step's topic";
