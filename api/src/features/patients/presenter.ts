import type { LinkBuilder } from '../../shared/http/links.js';
import type { Patient } from './store.js';
import type { PatientView } from './schema.js';

export function presentPatient(patient: Patient, link: LinkBuilder): PatientView {
  return {
    id: patient.id,
    resourceType: 'Patient',
    givenName: patient.givenName,
    familyName: patient.familyName,
    ...(patient.birthDate !== undefined && { birthDate: patient.birthDate }),
    ...(patient.sex !== undefined && { sex: patient.sex }),
    ...(patient.email !== undefined && { email: patient.email }),
    ...(patient.phoneNumber !== undefined && { phoneNumber: patient.phoneNumber }),
    ...(patient.preferredLanguage !== undefined && { preferredLanguage: patient.preferredLanguage }),
    createdAt: patient.createdAt.toISOString(),
    updatedAt: patient.updatedAt.toISOString(),
    _version: String(patient.version),
    _links: { self: { href: link(`/api/platform/v1/patients/${patient.id}`) } },
  };
}
