import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AllergyIntolerance, OperationOutcome } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { ALTERNATE, example, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";
import { expectOk, journalledCall, stored } from "./response-checks.js";

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/operations/${name}`, import.meta.url));

const allergy = () => example<AllergyIntolerance>("allergyintolerance-example.json");

describe("an operations file (--operations) renaming add-allergy's code and adding an alias", () => {
  const operationsFile = fixture("rename-add-allergy.yaml");

  it.each(["AllergyIntolerance-Create", "allergyintolerance-create", "allergy-add", "ALLERGY-ADD"])(
    "routes %s to add-allergy",
    async (code) => {
      const { app } = createApp({ operationsFile });
      const request = messageBundle(code, [allergy()]);

      const reply = await post(app, request);

      const [saved] = expectOk(reply, request, STANDARD);
      expect(saved?.resourceType).toBe("AllergyIntolerance");
      expect(responseHeader(reply.body).eventCoding?.code).toBe(code);
      expect((await journalledCall(app, responseHeader(request).id as string)).operation).toBe("add-allergy");
    },
  );

  it("routes the new code given as eventUri", async () => {
    const { app } = createApp({ operationsFile });
    const request = messageBundle("AllergyIntolerance-Create", [allergy()], { eventUri: true });

    expectOk(await post(app, request), request, STANDARD);
    expect((await journalledCall(app, responseHeader(request).id as string)).operation).toBe("add-allergy");
  });

  it("no longer knows the old code: 400 listing the known codes", async () => {
    const { app } = createApp({ operationsFile });
    const request = messageBundle("add-allergy", [allergy()]);

    const reply = await post(app, request);

    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const outcome = reply.body as OperationOutcome;
    expect(outcome.resourceType).toBe("OperationOutcome");
    const said = outcome.issue.map((i) => i.diagnostics).join(" ");
    expect(said).toMatch(/Unknown event "add-allergy"/);
    for (const code of ["AllergyIntolerance-Create", "allergy-add", "update-allergy", "cancel-task"]) {
      expect(said).toContain(code);
    }
    expect((await journalledCall(app, responseHeader(request).id as string)).operation).toBeNull();
  });

  it("leaves the other operations as they were", async () => {
    const { app } = createApp({ operationsFile });
    const request = messageBundle("add-history", [example("condition-example.json")]);

    expectOk(await post(app, request), request, STANDARD);
  });

  it("shows the new code and alias in GET /__admin/operations", async () => {
    const { app } = createApp({ operationsFile });

    const res = await app.request("/__admin/operations");

    const { operations } = (await res.json()) as {
      operations: Array<{ id: string; event: string; aliases: string[]; path: string }>;
    };
    expect(operations).toHaveLength(18);
    expect(operations.find((op) => op.id === "add-allergy")).toMatchObject({
      event: "AllergyIntolerance-Create",
      aliases: ["allergy-add"],
      path: STANDARD,
    });
    expect(operations.find((op) => op.id === "update-allergy")).toMatchObject({ event: "update-allergy", aliases: [] });
  });
});

describe("an operations file moving an operation's path", () => {
  it("serves remove-allergy on the standard path and refuses it on the alternate one", async () => {
    const { app } = createApp({ operationsFile: fixture("move-path.yaml") });
    const saved = await stored<AllergyIntolerance>(app, messageBundle("add-allergy", [allergy()]));

    const wrong = await post(app, messageBundle("remove-allergy", [saved]), { path: ALTERNATE });
    expect(wrong.status).toBe(404);
    expect(wrong.body.issue[0].diagnostics).toContain(STANDARD);

    const request = messageBundle("remove-allergy", [saved]);
    expectOk(await post(app, request, { path: STANDARD }), request, STANDARD);
    expect(wrong.body.resourceType).toBe("OperationOutcome");
  });
});

describe("an invalid operations file stops createApp with the file and line", () => {
  it.each([
    [
      "an unknown operation id",
      "unknown-operation.yaml",
      5,
      /unknown operation "add-alergy".*known: view-patient-profile/,
    ],
    ["YAML that does not parse", "bad-yaml.yaml", 5, /flow sequence/i],
    [
      "an event code with spaces",
      "bad-event-code.yaml",
      3,
      /operations\.add-allergy\.event: an event code without spaces/,
    ],
    ["an alias that is another operation's code", "clashing-alias.yaml", 5, /"update-allergy".*add-allergy/],
  ])("%s (%s, line %i)", (_, name, line, says) => {
    const operationsFile = fixture(name);

    let thrown: unknown;
    try {
      createApp({ operationsFile });
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(Error);
    const message = (thrown as Error).message;
    expect(message).toContain(`${operationsFile}:${line}:`);
    expect(message).toMatch(says);
  });

  describe("written on the fly", () => {
    let dir: string | undefined;
    afterEach(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
      dir = undefined;
    });

    it.each([
      ["a key the format does not have", "operations:\n  add-allergy:\n    evnt: x\n", 3, /evnt/],
      ["a path that is not a $process-message path", "operations:\n  add-task:\n    path: /tasks\n", 3, /path/],
      ["no operations map", "add-allergy:\n  event: x\n", 1, /operations/],
    ])("%s", (_, text, line, says) => {
      dir = mkdtempSync(join(tmpdir(), "operations-file-"));
      const operationsFile = join(dir, "operations.yaml");
      writeFileSync(operationsFile, text);

      expect(() => createApp({ operationsFile })).toThrow(
        expect.objectContaining({ message: expect.stringContaining(`${operationsFile}:${line}:`) }),
      );
      expect(() => createApp({ operationsFile })).toThrow(says);
    });
  });

  it("names a file that does not exist", () => {
    const operationsFile = fixture("no-such-file.yaml");

    expect(() => createApp({ operationsFile })).toThrow(operationsFile);
  });
});
