import type {
  TestScript,
  TestScriptSetupActionAssert,
  TestScriptSetupActionOperation,
  TestScriptTest,
} from "fhir/r4.js";
import { ACTION_KINDS, type Plan, type PlanStep, type PlanTest, stepKind } from "../plan-schema.js";

/**
 * A plan as an R4 TestScript: its tests as test[], each step an action: the sandbox's actions (ACTION_KINDS) as
 * `operation`s, the expectations of the system under test as `assert`s, each with the step's title as description
 * and its id as label. The TestScript model is a test engine sending requests; here the sandbox answers the system's
 * messages or pushes to the pharmacy, so an operation names the URL it acts at through a variable (tst-8: an
 * operation has a url, params, a targetId or a sourceId).
 */

/** The canonical URL of a plan's TestScript; the TestReport of a session of the plan names it. */
export const testScriptUrl = (planId: string) => `urn:uae-fhir-sandbox:conformance:${planId}`;

/** The TestScript operation code of a message sent to an endpoint (testscript-operation-codes). */
const PROCESS_MESSAGE = {
  system: "http://terminology.hl7.org/CodeSystem/testscript-operation-codes",
  code: "process-message",
  display: "$process-message",
};

/** A computer-friendly name (tst-0: [A-Z]([A-Za-z0-9_]){0,254}): sender-basic → SenderBasic. */
function nameOf(id: string): string {
  const name = id
    .split("-")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  return (/^[A-Z]/.test(name) ? name : `Plan${name}`).slice(0, 255);
}

/** Expectations about what the system answers (a push's acknowledgement); the others are about what it sends. */
const ABOUT_RESPONSES = new Set(["expectAck", "expectRefused"]);

function operation(step: PlanStep): TestScriptSetupActionOperation {
  const kind = stepKind(step);
  const base = { label: step.id, description: step.title, encodeRequestUrl: false };
  if (kind === "answerNext") {
    // The sandbox answers the next message the system sends to its message URL.
    return { ...base, url: `\${messageUrl}` };
  }
  // A push: the sandbox posts a message Bundle to the pharmacy's endpoint.
  return { ...base, type: PROCESS_MESSAGE, resource: "Bundle", method: "post", url: `\${pharmacyUrl}` };
}

function assertion(step: PlanStep, test: PlanTest): TestScriptSetupActionAssert {
  // A step that is not required (or of a test that is not) only warns. (R4 has no stopTestOnFail: a required step
  // that fails ends its test in the sandbox, as the description of the plan says.)
  const warningOnly = step.required === false || test.required === false;
  return {
    label: step.id,
    description: step.title,
    direction: ABOUT_RESPONSES.has(stepKind(step)) ? "response" : "request",
    warningOnly,
  };
}

function test(plan: Plan, t: PlanTest): TestScriptTest {
  const rule = plan.rules[t.rule];
  const description = [
    `${t.title}.`,
    rule ? `Rule ${t.rule} (${rule.source}): ${rule.text} ${rule.ref}` : `Rule ${t.rule}.`,
    t.required === false ? "Not required: its failures are warnings." : "",
    t.description ?? "",
  ]
    .filter(Boolean)
    .join(" ");
  return {
    name: t.id,
    description,
    action: (t.steps as PlanStep[]).map((step) =>
      ACTION_KINDS.has(stepKind(step)) ? { operation: operation(step) } : { assert: assertion(step, t) },
    ),
  };
}

export function testScript(plan: Plan): TestScript {
  const receiver = plan.role === "receiver";
  return {
    resourceType: "TestScript",
    ...(/^[A-Za-z0-9\-.]{1,64}$/.test(plan.id) ? { id: plan.id } : {}),
    url: testScriptUrl(plan.id),
    version: plan.version,
    name: nameOf(plan.id),
    title: plan.title,
    status: "active",
    ...(plan.description ? { description: plan.description } : {}),
    purpose: receiver
      ? "Tests a pharmacy system (the receiver role): the sandbox pushes orders to its endpoint and watches its answers and messages."
      : "Tests a sender system (a clinic or health-program system): the sandbox answers its messages as scripted and watches what it sends next.",
    variable: [
      {
        name: "messageUrl",
        description: "the workspace's message URL, where the system under test sends its messages",
        hint: "http://127.0.0.1:8080/uae-fhir/r4/$process-message",
      },
      ...(receiver
        ? [
            {
              name: "pharmacyUrl",
              description: "the pharmacy's push endpoint (registered for the session, or the one it subscribed with)",
              hint: "http://127.0.0.1:9090/notifications",
            },
          ]
        : []),
    ],
    test: plan.tests.map((t) => test(plan, t)),
  };
}
