// The patient read's one answer, for its Koa route and the node:http fast path (shared/http/keyed-fast-path.ts).
import type { Principal } from '../../shared/http/auth.js';
import { PRIVATE_NO_CACHE } from '../../shared/http/caching.js';
import { representation, strongEtag, type Representation } from '../../shared/http/conditional.js';
import type { LinkBuilder } from '../../shared/http/links.js';
import { presentPatient } from './presenter.js';
import type { PatientService } from './service.js';

/** The profile's representation; throws the service's 403/404 (problem responses are Koa's). */
export async function patientAnswer(
  patients: PatientService,
  principal: Principal,
  id: string,
  ifNoneMatch: string | undefined,
  link: LinkBuilder,
): Promise<Representation> {
  const patient = await patients.get(principal, id);
  return representation(
    ifNoneMatch,
    strongEtag(patient.version),
    () => presentPatient(patient, link),
    PRIVATE_NO_CACHE,
  );
}
