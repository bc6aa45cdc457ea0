import type { ShardDb } from "../../store/shards";
import { checkParamClause } from "../../domain/activity";
import { typedValues } from "../../domain/attributes";
import type { FieldProblem } from "../../domain/problems";
import { DAY_OPS, type SegmentCondition, type SegmentNode } from "../../domain/segments";
import { getCampaign } from "../../store/campaigns/definitions";
import { existingListIds } from "../../store/lists";
import type { SegmentCatalog } from "../../store/segment-sql";

/**
 * What the schema cannot see in a segment's `match`: the attributes, lists, activities,
 * parameters and campaigns it names exist in the panel, and each value fits the type of
 * what it is compared with. Returns the match with values in their stored types (`"30"`
 * for an integer attribute becomes 30), or the problems, each naming its field.
 */
export async function checkSegmentMatch(
  db: ShardDb,
  panelId: string,
  catalog: SegmentCatalog,
  match: SegmentNode,
  field = "match",
): Promise<{ ok: true; match: SegmentNode } | { ok: false; problems: FieldProblem[] }> {
  const problems: FieldProblem[] = [];
  const lists: Array<[number, string]> = [];
  const campaigns: Array<[string, string]> = [];
  const walk = (node: SegmentNode, path: string): SegmentNode => {
    if ("all" in node) return { all: node.all.map((n, i) => walk(n, `${path}.all.${i}`)) };
    if ("any" in node) return { any: node.any.map((n, i) => walk(n, `${path}.any.${i}`)) };
    if ("not" in node) return { not: walk(node.not, `${path}.not`) };
    return condition(node, path);
  };
  const condition = (c: SegmentCondition, path: string): SegmentCondition => {
    if ("attribute" in c) {
      const type = catalog.attributes.get(c.attribute);
      if (!type) {
        problems.push({ field: `${path}.attribute`, message: `no attribute named ${c.attribute} in this panel` });
        return c;
      }
      if ((DAY_OPS as readonly string[]).includes(c.op)) {
        if (type !== "date") problems.push({ field: `${path}.op`, message: `${c.op} is for date attributes; ${c.attribute} is ${type}` });
        return c;
      }
      if (c.value === undefined) return c;
      if ((c.op === "contains" || c.op === "starts_with") && type !== "string") {
        problems.push({ field: `${path}.op`, message: `${c.op} is for string attributes; ${c.attribute} is ${type}` });
        return c;
      }
      return { ...c, value: typedValues(type, c.value, `${path}.value`, problems) as typeof c.value };
    }
    if ("list" in c) {
      lists.push([c.list, `${path}.list`]);
      return c;
    }
    if ("activity" in c) {
      const definition = catalog.activities.get(c.activity.toLowerCase());
      if (!definition) {
        problems.push({ field: `${path}.activity`, message: `no activity named "${c.activity}" is defined in this panel` });
        return c;
      }
      const where = c.where?.map((w, i) => {
        const at = `${path}.where.${i}`;
        const fit = checkParamClause(definition, { name: w.param, op: w.op, value: w.value }, { name: `${at}.param`, op: `${at}.op`, value: `${at}.value` }, problems);
        return fit ? { ...w, param: fit.name, value: fit.value as typeof w.value } : w;
      });
      return { ...c, activity: definition.name, ...(where ? { where } : {}) };
    }
    if ("engagement" in c && c.campaign !== "any") campaigns.push([c.campaign, `${path}.campaign`]);
    return c;
  };
  const checked = walk(match, field);
  if (lists.length) {
    const found = await existingListIds(db, panelId, lists.map(([id]) => id));
    for (const [id, at] of lists) if (!found.has(id)) problems.push({ field: at, message: `no list with id ${id} in this panel` });
  }
  for (const [id, at] of campaigns) {
    if (!(await getCampaign(db, panelId, id))) problems.push({ field: at, message: `no campaign with id "${id}" in this panel` });
  }
  return problems.length ? { ok: false, problems } : { ok: true, match: checked };
}
