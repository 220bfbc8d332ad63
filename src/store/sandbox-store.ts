import type { Patient, Resource } from "fhir/r4.js";
import { isFixed } from "../fhir/fixed-resources.js";
import { type GeneratedProfile, generateProfile, profileRecords } from "../generate/patient-profile.js";
import { NO_STATE, type StateSink } from "../state/state-sink.js";
import { identifierKey, type PatientIdentity } from "./patient-identity.js";
import type { ProfileCache } from "./profile-cache.js";
import { RecordInterner } from "./record-interner.js";

/** Resource types kept per patient. */
export type RecordType = "AllergyIntolerance" | "Condition" | "Procedure" | "Observation" | "Task";

export interface StoreDeps {
  seed: string;
  emiratesIdSystem: string;
  now(): Date;
  newId(): string;
  /** Generated profiles shared with other stores (the workspaces of one sandbox); none: each is generated here. */
  profiles?: ProfileCache;
  /** Recurring parts and strings shared with other stores; none: the store keeps its own. */
  interner?: RecordInterner;
  /** Where it says what changed, for the state file (--state-file); none: it lives in memory only. */
  sink?: StateSink;
}

/** A patient as the state file keeps it: the resource, every key it is known by, whether it is pinned. */
export interface SavedPatient {
  patient: Patient;
  keys: string[];
  pinned: boolean;
}

/** A record as the state file keeps it. */
export interface SavedRecord {
  resource: Resource;
  patientId: string;
}

/** What the store keeps at most, so that a long-running shared sandbox stays within its memory. */
export interface StoreLimits {
  /** Patients kept besides the pinned ones; the least recently used is forgotten first. */
  patients: number;
  /** Records kept per patient (removed ones included); the oldest is forgotten first. */
  recordsPerPatient: number;
}

/** What the store holds and may hold, for GET /__admin/health. */
export interface StoreCounts {
  patients: number;
  pinnedPatients: number;
  records: number;
  evictedPatients: number;
  evictedRecords: number;
  limits: StoreLimits;
}

/** A patient's whole state, for the admin API. */
export interface PatientState {
  patient: Patient;
  keys: string[];
  records: Resource[];
}

/** A patient in the list of known patients (GET /__admin/patients). */
export interface PatientSummary {
  id: string;
  identifier: NonNullable<Patient["identifier"]>;
  name: NonNullable<Patient["name"]>;
  gender: string | null;
  birthDate: string | null;
  /** Records held, by type (removed ones included). */
  records: Partial<Record<RecordType, number>>;
}

/** A stored record, in its type's index and its patient's list (updated in place: both see the new version). */
interface Held {
  resource: Resource;
  patientId: string;
}

/**
 * The sandbox's state: patients found by any of their keys, and their
 * records by `Type/id`. Handlers go through these methods only. A stored
 * resource is frozen and handed out as is (no copy on every read, the
 * request path's biggest cost before): callers build new objects to change
 * one, and the store keeps what it was given, so give it objects you own.
 * Records share their recurring parts (a coding, a reference) with other
 * records (RecordInterner), which the freezing makes safe.
 *
 * Bounded (StoreLimits): past `patients`, the least recently used patient is
 * forgotten with its records — a later message naming it generates the same
 * profile again, from the seed — except pinned ones (fixtures, and patients
 * that scenario rules name), which stay; past `recordsPerPatient`, a
 * patient's oldest record is forgotten.
 */
export class SandboxStore {
  readonly #patients = new Map<string, Patient>();
  readonly #keys = new Map<string, string>();
  /** Each patient's keys, to forget them with it. */
  readonly #keysOf = new Map<string, string[]>();
  /**
   * Records by type, then id: keyed by the record's own id string, so an
   * entry costs no `Type/id` string of its own.
   */
  readonly #records = new Map<string, Map<string, Held>>();
  /** Each patient's records, oldest first. */
  readonly #byPatient = new Map<string, Held[]>();
  readonly #interner: RecordInterner;
  readonly #sink: StateSink;
  /** Unpinned patient ids, least recently used first (a Set keeps insertion order: touching re-inserts). */
  readonly #recent = new Set<string>();
  readonly #pinned = new Set<string>();
  #pinnedKeys: ReadonlySet<string> = new Set();
  #evictedPatients = 0;
  #evictedRecords = 0;

  constructor(
    private readonly deps: StoreDeps,
    readonly limits: StoreLimits = { patients: Number.POSITIVE_INFINITY, recordsPerPatient: Number.POSITIVE_INFINITY },
  ) {
    this.#interner = deps.interner ?? new RecordInterner();
    this.#sink = deps.sink ?? NO_STATE;
  }

  /** Says the patient changed (its keys, its pin), for the state file. */
  #savePatient(id: string): void {
    if (!this.#sink.active) return;
    this.#sink.put(
      "patient",
      id,
      (): SavedPatient => ({
        patient: this.#patients.get(id) as Patient,
        keys: this.#keysOf.get(id) ?? [],
        pinned: this.#pinned.has(id),
      }),
    );
  }

  /** Says the record changed, or went, for the state file. */
  #saveRecord(held: Held, gone = false): void {
    if (!this.#sink.active) return;
    const key = `${held.resource.resourceType}/${held.resource.id}`;
    if (gone) this.#sink.remove("record", key);
    else this.#sink.put("record", key, (): SavedRecord => ({ resource: held.resource, patientId: held.patientId }));
  }

  /**
   * The state a state file kept, instead of what the store holds: patients (in the order they were met, the least
   * recently used first) and records (in the order they were stored). Nothing of it is said back to the file.
   */
  restore(patients: Iterable<SavedPatient>, records: Iterable<SavedRecord>): void {
    this.clear();
    for (const { patient, keys, pinned } of patients) {
      const id = patient.id as string;
      this.#patients.set(id, this.#interner.keep(patient));
      const own: string[] = [];
      for (const key of keys) {
        if (this.#keys.has(key)) continue;
        this.#keys.set(key, id);
        own.push(key);
      }
      this.#keysOf.set(id, own);
      this.#byPatient.set(id, []);
      if (pinned) this.#pinned.add(id);
      else this.#recent.add(id);
    }
    for (const { resource, patientId } of records) {
      const list = this.#byPatient.get(patientId);
      if (!list) continue;
      const held: Held = { resource: this.#interner.keep(resource), patientId };
      list.push(held);
      this.#index(resource.resourceType).set(resource.id as string, held);
    }
  }

  /** The patient any of these keys names, if the sandbox knows it (it becomes the most recently used). */
  findPatient(identity: PatientIdentity): Patient | undefined {
    for (const key of identity.keys) {
      const id = this.#keys.get(key);
      if (id) return this.#touch(id);
    }
    return undefined;
  }

  /** The patient with this server id, if the sandbox knows it. */
  patient(id: string): Patient | undefined {
    return this.#touch(id);
  }

  #touch(id: string): Patient | undefined {
    const patient = this.#patients.get(id);
    if (patient && this.#recent.delete(id)) this.#recent.add(id);
    return patient;
  }

  /** Keeps this patient whatever the limits (fixtures). */
  pin(id: string): void {
    if (!this.#patients.has(id) || this.#pinned.has(id)) return;
    this.#pinned.add(id);
    this.#recent.delete(id);
    this.#savePatient(id);
  }

  /**
   * Patients known by any of these keys are pinned, now and when they appear
   * (the patients scenario rules name, such as the magic test patients).
   */
  pinKeys(keys: Iterable<string>): void {
    this.#pinnedKeys = new Set(keys);
    for (const key of this.#pinnedKeys) {
      const id = this.#keys.get(key);
      if (id) this.pin(id);
    }
  }

  /** How many patients and records are held, the limits, and what the limits made the store forget. */
  counts(): StoreCounts {
    return {
      patients: this.#patients.size,
      pinnedPatients: this.#pinned.size,
      records: this.#recordCount(),
      evictedPatients: this.#evictedPatients,
      evictedRecords: this.#evictedRecords,
      limits: { ...this.limits },
    };
  }

  /**
   * The patient these keys name; an unknown one gets a generated profile,
   * derived from the seed and its first key, with what the request sent
   * (`identity.given`, its id included). `records: false` leaves out the
   * generated clinical records (fixtures bring their own).
   */
  ensurePatient(identity: PatientIdentity, options: { records?: boolean } = {}): Patient {
    const known = this.findPatient(identity);
    if (known) return known;
    const profile = this.#generated(identity);
    this.#addPatient(profile.patient, identity.keys);
    if (options.records !== false) for (const r of profileRecords(profile)) this.#hold(r, profile.patient.id as string);
    return this.#patients.get(profile.patient.id as string) as Patient;
  }

  /** The profile generated for a patient met for the first time: from the shared cache, when there is one. */
  #generated(identity: PatientIdentity): GeneratedProfile {
    const { profiles } = this.deps;
    if (!profiles) return generatedProfileOf(identity, this.deps);
    const key = JSON.stringify([this.deps.seed, this.deps.emiratesIdSystem, identity.keys[0], identity.given]);
    return profiles.get(key, () => generatedProfileOf(identity, this.deps));
  }

  /** Adds a patient as given (fixtures), known by its identifiers, its id and `keys`. */
  putPatient(patient: Patient, keys: string[] = []): Patient {
    const stored = { ...patient, id: patient.id ?? this.deps.newId() } as Patient;
    this.#addPatient(stored, keys);
    return stored;
  }

  #addPatient(patient: Patient, keys: string[]): void {
    const id = patient.id as string;
    this.#patients.set(id, this.#interner.keep(structuredClone(patient)));
    const all = [
      ...keys,
      id,
      ...(patient.identifier ?? []).flatMap((i) => (i.value ? [identifierKey(i.system, i.value)] : [])),
    ];
    const own = this.#keysOf.get(id) ?? [];
    for (const key of all) {
      if (this.#keys.has(key)) continue;
      this.#keys.set(key, id);
      own.push(key);
    }
    this.#keysOf.set(id, own);
    this.#savePatient(id);
    if (!this.#byPatient.has(id)) this.#byPatient.set(id, []);
    if (this.#pinned.has(id)) return;
    if (own.some((key) => this.#pinnedKeys.has(key))) {
      this.#pinned.add(id);
      return;
    }
    this.#recent.delete(id);
    this.#recent.add(id);
    // The newest patient is never the one forgotten: it is about to be used.
    while (this.#recent.size > this.limits.patients) {
      const oldest = this.#recent.values().next().value as string;
      this.#forgetPatient(oldest);
    }
  }

  #forgetPatient(id: string): void {
    this.#recent.delete(id);
    this.#patients.delete(id);
    for (const key of this.#keysOf.get(id) ?? []) this.#keys.delete(key);
    this.#keysOf.delete(id);
    for (const held of this.#byPatient.get(id) ?? []) {
      this.#unindex(held);
      this.#saveRecord(held, true);
    }
    this.#byPatient.delete(id);
    this.#evictedPatients++;
    if (this.#sink.active) this.#sink.remove("patient", id);
  }

  #hold(resource: Resource, patientId: string): void {
    const byId = this.#index(resource.resourceType);
    const id = resource.id as string;
    let held = byId.get(id);
    if (!held) {
      const list = this.#byPatient.get(patientId);
      // Its patient was forgotten meanwhile (a message naming more patients than the limit): nothing to keep it for.
      if (!list) return;
      held = { resource, patientId };
      list.push(held);
      while (list.length > this.limits.recordsPerPatient) {
        const oldest = list.shift() as Held;
        this.#unindex(oldest);
        this.#saveRecord(oldest, true);
        this.#evictedRecords++;
      }
      byId.set(id, held);
    }
    held.resource = this.#interner.keep(resource);
    held.patientId = patientId;
    this.#saveRecord(held);
  }

  #index(type: string): Map<string, Held> {
    let byId = this.#records.get(type);
    if (!byId) {
      byId = new Map();
      this.#records.set(type, byId);
    }
    return byId;
  }

  #unindex(held: Held): void {
    this.#records.get(held.resource.resourceType)?.delete(held.resource.id as string);
  }

  #recordCount(): number {
    let count = 0;
    for (const byId of this.#records.values()) count += byId.size;
    return count;
  }

  /** Stores a record as given (fixtures): its id kept, or a server id; version 1 unless it has one. */
  putRecord<R extends Resource>(resource: R, patientId: string): R {
    // { ...resource, id, meta: { versionId: "1", lastUpdated, ...resource.meta } }, built key by key (see #stamp).
    const stored = spreadInto({}, resource);
    stored.id = resource.id ?? this.deps.newId();
    stored.meta = spreadInto({ versionId: "1", lastUpdated: this.deps.now().toISOString() }, resource.meta);
    this.#hold(stored as unknown as R, patientId);
    return stored as unknown as R;
  }

  /**
   * A record of the generated profile of a patient the sandbox has not met
   * yet: the profile is generated (as on first use) only if it holds the
   * record, so a message about an unseen patient's generated record finds
   * it (the records a view would list), and any other id changes nothing.
   */
  generatedRecord<R extends Resource>(
    identity: PatientIdentity,
    type: RecordType,
    id: string,
  ): { resource: R; patientId: string } | undefined {
    if (identity.keys.length === 0 || this.findPatient(identity)) return undefined;
    const records = profileRecords(this.#generated(identity));
    if (!records.some((r) => r.resourceType === type && r.id === id)) return undefined;
    this.ensurePatient(identity);
    return this.get<R>(type, id);
  }

  /** A stored record and the id of the patient it belongs to. */
  get<R extends Resource>(type: RecordType, id: string): { resource: R; patientId: string } | undefined {
    const held = this.#records.get(type)?.get(id);
    return held ? { resource: held.resource as R, patientId: held.patientId } : undefined;
  }

  /** Stores a new record for a patient with a server id and version 1. */
  create<R extends Resource>(resource: R, patientId: string): R {
    const stored = this.#stamp(resource, this.deps.newId(), 1);
    this.#hold(stored, patientId);
    return this.#answered(stored);
  }

  /** Replaces a stored record with a new version (versionId + 1). */
  update<R extends Resource>(resource: R): R {
    const held = this.#records.get(resource.resourceType)?.get(resource.id as string);
    if (!held) throw new Error(`update of unknown record ${resource.resourceType}/${resource.id}`);
    const version = Number(held.resource.meta?.versionId ?? "1") + 1;
    const stored = this.#stamp(resource, resource.id as string, version);
    this.#hold(stored, held.patientId);
    return this.#answered(stored);
  }

  /**
   * A record just created or updated, which the caller answers with: frozen all the way down once held
   * (RecordInterner), so its JSON text and references are worked out once (fixed-resources), without the walk that
   * would tell it.
   */
  #answered<R extends Resource>(stored: R): R {
    if (Object.isFrozen(stored)) isFixed(stored);
    return stored;
  }

  /**
   * `{ ...resource, id, meta: { ...resource.meta, versionId, lastUpdated } }`
   * (meta last), built key by key: on Node 20 an object literal that spreads
   * and then adds keys gets a hidden class of its own, so each stored record
   * cost a few hundred bytes of V8 maps; objects built one key at a time in
   * the same order share one.
   */
  #stamp<R extends Resource>(resource: R, id: string, version: number): R {
    const stored = spreadInto({}, resource, "meta");
    stored.id = id;
    const stamp = { versionId: String(version), lastUpdated: this.deps.now().toISOString() };
    const kept = spreadInto({}, resource.meta, "versionId", "lastUpdated");
    // The usual case, no other meta: the literal, a smaller object than one grown key by key.
    stored.meta = Object.keys(kept).length === 0 ? stamp : spreadInto(kept, stamp);
    return stored as unknown as R;
  }

  /** A patient's records of some types, in the order they were stored (removed ones included). */
  records<R extends Resource>(patientId: string, types: readonly RecordType[]): R[] {
    return (this.#byPatient.get(patientId) ?? []).flatMap((held) =>
      (types as readonly string[]).includes(held.resource.resourceType) ? [held.resource as R] : [],
    );
  }

  /** Every patient the sandbox knows, in the order it met them, with how many records of each type they have. */
  patients(): PatientSummary[] {
    return [...this.#patients.values()].map((patient) => {
      const id = patient.id as string;
      const records: Partial<Record<RecordType, number>> = {};
      for (const held of this.#byPatient.get(id) ?? []) {
        const type = held.resource.resourceType as RecordType;
        records[type] = (records[type] ?? 0) + 1;
      }
      return {
        id,
        identifier: patient.identifier ?? [],
        name: patient.name ?? [],
        gender: patient.gender ?? null,
        birthDate: patient.birthDate ?? null,
        records,
      };
    });
  }

  /** One patient's whole state, found by any key. */
  state(key: string): PatientState | undefined {
    const id = this.#keys.get(key);
    const patient = id ? this.#patients.get(id) : undefined;
    if (!id || !patient) return undefined;
    const keys = [...(this.#keysOf.get(id) ?? [])];
    return {
      patient,
      keys,
      records: this.records(id, ["AllergyIntolerance", "Condition", "Procedure", "Observation", "Task"]),
    };
  }

  /** Forgets everything; the caller loads fixtures again. */
  clear(): void {
    this.#patients.clear();
    this.#keys.clear();
    this.#keysOf.clear();
    this.#records.clear();
    this.#byPatient.clear();
    this.#recent.clear();
    this.#pinned.clear();
    this.#evictedPatients = 0;
    this.#evictedRecords = 0;
  }
}

/**
 * The profile the sandbox generates for a patient it meets for the first
 * time: derived from the seed and the first key, with what the message sent.
 * Exported so that the `example` command builds messages about exactly the
 * records a sandbox with the same seed holds.
 */
export function generatedProfileOf(
  identity: PatientIdentity,
  deps: Pick<StoreDeps, "seed" | "emiratesIdSystem">,
): GeneratedProfile {
  const key = identity.keys[0];
  if (key === undefined) throw new Error("a patient identity needs a key");
  const given = { ...identity.given };
  // A key that is an identifier is one of the patient's identifiers.
  const bar = key.indexOf("|");
  if (bar >= 0 && !given.identifier)
    given.identifier = [{ system: key.slice(0, bar) || undefined, value: key.slice(bar + 1) }];
  return generateProfile(deps.seed, key, given, deps.emiratesIdSystem);
}

/**
 * `{ ...target, ...source }` less the `omit` keys, into `target`, one key at
 * a time (see SandboxStore#stamp), key order as a spread gives it.
 */
function spreadInto(target: Record<string, unknown>, source: object | undefined, ...omit: string[]) {
  if (source === undefined) return target;
  for (const key of Object.keys(source)) {
    if (omit.includes(key)) continue;
    const value = (source as Record<string, unknown>)[key];
    // To a spread an own "__proto__" (JSON.parse makes them) is a key like any other; assigning it would set the prototype.
    if (key === "__proto__")
      Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
    else target[key] = value;
  }
  return target;
}
