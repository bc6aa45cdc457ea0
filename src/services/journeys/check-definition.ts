import { activityNameKey, checkParamClause, type ActivityDefinition } from "../../domain/activity";
import { htmlWithPreheader } from "../../domain/email-templates";
import { journeyGraphProblems, type EmailStep, type JourneyDefinition, type ProposedJourneyDefinition } from "../../domain/journey";
import { layoutProblems, type JourneyLayout } from "../../domain/journey-layout";
import type { FieldProblem } from "../../domain/problems";
import { refused, succeeded, type Result } from "../../lib/problems";
import { findActivityByName } from "../../store/activities";
import { getList } from "../../store/lists";
import { getSegment } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { getSmsTemplate } from "../../store/sms";
import { getTopic } from "../../store/topics";
import { getWebhook } from "../../store/webhooks";
import { copyOfEmailTemplate } from "../email-templates/templates";

/** The definition as checked, or refused (invalid) with every problem found. */
export type CheckedDefinition = Result<JourneyDefinition>;

/**
 * What the schema cannot see: the step graph, the activity (with the parameters its trigger
 * filters on), list, webhooks, topics and SMS templates it names, and the layout's step ids. Gives the definition
 * with the trigger's parameter names as the activity defines them and their values in the
 * parameters' types, and each email step that names an email template without its own subject
 * and html filled with a copy of the template's (issue 43: the saved journey keeps that copy).
 */
export async function checkDefinition(db: ShardDb, panelId: string, definition: ProposedJourneyDefinition, layout?: JourneyLayout): Promise<CheckedDefinition> {
  const problems = [...journeyGraphProblems(definition), ...(layout ? layoutProblems(definition, layout) : [])];
  let { trigger: t } = definition;
  if (t.type === "activity") {
    const activity = await findActivityByName(db, panelId, t.activity);
    if (!activity) problems.push({ field: "trigger.activity", message: `no activity named "${t.activity}" is defined in this panel` });
    else if (t.params) t = { ...t, params: checkedParams(activity, t.params, "trigger.params", problems) };
  }
  if (t.type === "list" && !(await getList(db, panelId, t.listid))) problems.push({ field: "trigger.listid", message: `no list with id ${t.listid} in this panel` });
  if (t.type === "segment" && t.segment !== undefined && !(await getSegment(db, panelId, t.segment))) {
    problems.push({ field: "trigger.segment", message: `no segment with id "${t.segment}" in this panel` });
  }
  let goal = definition.goal;
  if (goal) {
    const activity = await findActivityByName(db, panelId, goal.activity);
    if (!activity) problems.push({ field: "goal.activity", message: `no activity named "${goal.activity}" is defined in this panel` });
    else if (t.type === "activity" && activityNameKey(t.activity) === activityNameKey(goal.activity)) {
      problems.push({ field: "goal.activity", message: "is the trigger's activity: the goal must be another activity" });
    } else if (goal.params) goal = { ...goal, params: checkedParams(activity, goal.params, "goal.params", problems) };
  }
  for (const [i, s] of definition.steps.entries()) {
    if (s.type === "split" && s.goal?.activity !== undefined && !(await findActivityByName(db, panelId, s.goal.activity))) {
      problems.push({ field: `steps.${i}.goal.activity`, message: `no activity named "${s.goal.activity}" is defined in this panel` });
    }
    if ("topic" in s && s.topic !== undefined && !(await getTopic(db, panelId, s.topic))) problems.push({ field: `steps.${i}.topic`, message: `no topic with id "${s.topic}" in this panel` });
    if (s.type === "webhook" && !(await getWebhook(db, panelId, s.webhook))) problems.push({ field: `steps.${i}.webhook`, message: `no webhook with id "${s.webhook}" in this panel` });
    if (s.type === "sms" && s.template !== undefined && !(await getSmsTemplate(db, panelId, s.template))) {
      problems.push({ field: `steps.${i}.template`, message: `no SMS template with id "${s.template}" in this panel` });
    }
    if (s.type === "wait_for_event" && !Array.isArray(s.events) && !(await findActivityByName(db, panelId, s.events.activity))) {
      problems.push({ field: `steps.${i}.events.activity`, message: `no activity named "${s.events.activity}" is defined in this panel` });
    }
  }
  const steps: JourneyDefinition["steps"] = [];
  for (const [i, s] of definition.steps.entries()) {
    if (s.type !== "email") steps.push(s);
    else if (s.subject !== undefined && s.html !== undefined) steps.push({ ...s, subject: s.subject, html: s.html });
    else {
      const copy = await copyOfEmailTemplate(db, panelId, s.email_template!, `steps.${i}.email_template`);
      if (copy.ok) steps.push({ ...s, subject: s.subject ?? copy.value.subject, html: s.html ?? htmlWithPreheader(copy.value) } satisfies EmailStep);
      else problems.push(...copy.problem.fields);
    }
  }
  if (problems.length) return refused("invalid", problems);
  return succeeded({ ...definition, trigger: t, steps, ...(goal ? { goal } : {}) });
}

type ParamFilter = NonNullable<Extract<JourneyDefinition["trigger"], { type: "activity" }>["params"]>;

/** An activity trigger's (or goal's) parameter filter: each clause names a parameter of the activity, with an operator and value that fit its type. */
function checkedParams(activity: ActivityDefinition, params: ParamFilter, field: string, problems: FieldProblem[]): ParamFilter {
  return params.map((clause, i) => {
    const at = `${field}.${i}`;
    const fit = checkParamClause(activity, { name: clause.attribute, op: clause.op, value: clause.value }, { name: `${at}.attribute`, op: `${at}.op`, value: `${at}.value` }, problems);
    return fit ? { ...clause, attribute: fit.name, value: fit.value as typeof clause.value } : clause;
  });
}
