import { describe, expect, it } from "vitest";
import { authorize } from "../../src/admin";
import type { AdminCaller } from "../../src/admin/auth";
import type { AdminRoute } from "../../src/admin/route";

// What authorize decides from a route's declared role, the caller and the path; the routes
// themselves are covered by each screen's tests.
const owner = { kind: "operator", session: { roles: [{ panelId: "pnl_a", role: "owner" }] } } as unknown as AdminCaller;
const route = (path: string, role: string) => ({ method: "GET", path, role }) as unknown as AdminRoute;
const refusal = (run: () => void) => {
  try {
    run();
    return null;
  } catch (error) {
    return { status: (error as { status: number }).status, message: (error as Error).message };
  }
};

describe("authorize", () => {
  it("lets an operator through a route of a panel it holds a role in, as far as its role goes", () => {
    expect(refusal(() => authorize(route("/panels/:panel/lists", "viewer"), owner, { panel: "pnl_a" }))).toBeNull();
    expect(refusal(() => authorize(route("/panels/:panel/x", "admin"), owner, { panel: "pnl_a" }))).toEqual({ status: 403, message: "Only the deployment's admin token may do this" });
    expect(refusal(() => authorize(route("/panels/:panel/lists", "viewer"), owner, { panel: "pnl_b" }))).toEqual({ status: 404, message: 'No panel with id "pnl_b"' });
  });

  it("refuses an operator a route off any panel's path even where it declares a panel role (a slip in a new route stays closed)", () => {
    expect(refusal(() => authorize(route("/reports", "viewer"), owner, {}))).toEqual({ status: 403, message: "Only the deployment's admin token may do this" });
    expect(refusal(() => authorize(route("/reports", "viewer"), { kind: "admin" }, {}))).toBeNull();
  });
});
