// The operator's only reader of process.env: core's shared settings plus the operator's own (who it is and
// which Lease it leads through), parsed, validated and frozen at start-up.
import { hostname } from 'node:os';
import { ConfigError, EnvReader, readCoreConfig, type CoreConfig } from '#core/config.js';

export { ConfigError };

export interface OperatorConfig extends CoreConfig {
  /** Namespace of the leader-election Lease (the pod's own, from the downward API). */
  readonly leaseNamespace: string;
  readonly leaseName: string;
  /** This instance's name in the Lease: the pod name, else host and pid. */
  readonly identity: string;
  /** The side port serving /healthz, /readyz and /metrics. */
  readonly httpHost: string;
  readonly httpPort: number;
}

const KUBERNETES_NAME = /^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

export function loadOperatorConfig(env: NodeJS.ProcessEnv = process.env): OperatorConfig {
  const read = new EnvReader(env);
  const core = readCoreConfig(read);
  const leaseNamespace = read.str('POD_NAMESPACE') ?? 'default';
  const leaseName = read.str('PORTICO_OPERATOR_LEASE') ?? 'portico-catalog-operator';
  for (const [variable, value] of [
    ['POD_NAMESPACE', leaseNamespace],
    ['PORTICO_OPERATOR_LEASE', leaseName],
  ] as const) {
    if (value.length > 253 || !KUBERNETES_NAME.test(value))
      read.problem(`${variable} must be a Kubernetes name (got "${value}")`);
  }
  const config: OperatorConfig = {
    ...core,
    leaseNamespace,
    leaseName,
    identity: read.str('POD_NAME') ?? `${hostname()}-${process.pid}`,
    httpHost: read.str('PORTICO_OPERATOR_HOST') ?? '0.0.0.0',
    httpPort: read.int('PORTICO_OPERATOR_PORT', 8081, 0, 65535),
  };
  read.check();
  return Object.freeze(config);
}
