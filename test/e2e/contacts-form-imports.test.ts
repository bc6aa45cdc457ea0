// Issue 44, item 5 in Chromium: a contact added by form (a refusal shown once, at its field),
// then a CSV whose headers are mapped to attributes, imported into a list and still in the
// import history after a reload.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { checkAccessibility, openBrowser, screenshot } from "./browser.ts";
import { keep, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

async function ownerPage(): Promise<Page> {
  const page = keep(await openBrowser(service.origin)).page;
  await page.goto(`${service.origin}/`);
  await page.getByLabel("Email").fill(service.printed["owner email"]!);
  await page.getByLabel("Password").fill(service.printed.password!);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Demo" }).waitFor();
  return page;
}

function nav(page: Page, screen: string) {
  return page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: screen, exact: true });
}

describe("contacts by form and mapped imports", () => {
  test("add a contact by form: a refused value is shown once, under its field", async () => {
    const page = await ownerPage();
    await nav(page, "Contacts").click();
    await page.getByRole("heading", { level: 1, name: "Contacts" }).waitFor();
    await page.getByRole("button", { name: "Add contact" }).click();
    const form = page.getByRole("form", { name: "Add a contact" });
    await form.getByLabel("EMAIL (primary key, required)").fill("Form.Added@example.com");
    await form.getByLabel("NAME", { exact: true }).fill("Added by form");
    await form.getByLabel("AGE", { exact: true }).fill("old");
    await form.getByRole("button", { name: "Add contact" }).click();
    const refusal = page.getByText('must be an integer, not "old"');
    await refusal.waitFor();
    assert.equal(await refusal.count(), 1, "the refusal appears once");
    assert.equal(await page.getByRole("alert").count(), 0, "no second copy at the top of the form");
    assert.equal(await form.getByLabel("AGE", { exact: true }).getAttribute("aria-invalid"), "true");
    await checkAccessibility(page, "contact-add-refused");
    await screenshot(page, "contact-add-refused");

    await form.getByLabel("AGE", { exact: true }).fill("36");
    await form.getByRole("button", { name: "Add contact" }).click();
    await page.getByRole("heading", { level: 1, name: "form.added@example.com" }).waitFor();
    const attributes = page.getByRole("definition");
    await attributes.filter({ hasText: /^Added by form$/ }).waitFor();
    assert.ok((await attributes.allTextContents()).includes("36"));
  });

  test("map a CSV's columns on import (an attribute, a new attribute, a skipped column); the import is in the history after a reload", async () => {
    const page = await ownerPage();
    await nav(page, "Lists").click();
    await page.getByRole("heading", { level: 1, name: "Lists" }).waitFor();
    await page.getByLabel("List name").fill("Mapped readers");
    await page.getByRole("button", { name: "Create list" }).click();
    const list = page.getByRole("listitem", { name: "List Mapped readers" });
    await list.waitFor();

    const csv = "E-mail,Full name,Shoe size,Notes\nmapped1@example.com,Reader One,38,skip me\nmapped2@example.com,Reader Two,41,\nmapped3@example.com,Reader Three,huge,\n";
    const transfer = await page.evaluateHandle((text) => {
      const scope = globalThis as any;
      const data = new scope.DataTransfer();
      data.items.add(new scope.File([text], "mapped.csv", { type: "text/csv" }));
      return data;
    }, csv);
    await list.getByTestId(/^dropzone-/).dispatchEvent("drop", { dataTransfer: transfer });
    const mapper = list.getByRole("form", { name: "Map the columns of mapped.csv" });
    await mapper.waitFor();
    await mapper.getByLabel("Column “E-mail”").selectOption("attribute:EMAIL");
    await mapper.getByLabel("Column “Full name”").selectOption("attribute:NAME");
    // "Shoe size" is no attribute: it starts as a new one named after it.
    assert.equal(await mapper.getByLabel("New attribute for “Shoe size”").inputValue(), "SHOE_SIZE");
    await mapper.getByLabel("Type of SHOE_SIZE").selectOption("integer");
    await mapper.getByLabel("Column “Notes”").selectOption("skip");
    await checkAccessibility(page, "import-mapping");
    await screenshot(page, "import-mapping");
    await mapper.getByRole("button", { name: "Import mapped.csv" }).click();
    await list.getByText("Import done").waitFor({ timeout: 60_000 });
    await list.getByText("3 rows done: 2 created, 0 updated, 1 failed.").waitFor();

    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Lists" }).waitFor();
    const history = page.getByRole("table", { name: "Imports of this panel, newest first" });
    const row = history.getByRole("row").filter({ hasText: "mapped.csv (columns mapped)" });
    await row.waitFor();
    assert.match((await row.textContent()) ?? "", /Mapped readers/);
    assert.match((await row.textContent()) ?? "", /completed: 3 rows, 2 created, 0 updated, 1 refused/);
    await row.getByRole("link", { name: /Download/ }).waitFor();
    await checkAccessibility(page, "import-history");
    await screenshot(page, "import-history");

    await page.getByRole("link", { name: "Members of Mapped readers" }).click();
    await page.getByRole("heading", { level: 1, name: "List Mapped readers" }).waitFor();
    await page.getByRole("table", { name: "Members of Mapped readers" }).getByRole("link", { name: "mapped1@example.com" }).click();
    await page.getByRole("heading", { level: 1, name: "mapped1@example.com" }).waitFor();
    await page.getByRole("definition").filter({ hasText: /^Reader One$/ }).waitFor();
    const facts = await page.getByRole("definition").allTextContents();
    assert.ok(facts.includes("38") && facts.includes("Reader One") && !facts.includes("skip me"), JSON.stringify(facts));
  });
});
