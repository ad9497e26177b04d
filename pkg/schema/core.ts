// JSON schemas for the core Kubernetes kinds skein reads. They list only the
// fields of pkg/model/objects.ts; everything else a real object carries (status
// fields we ignore, managedFields, ...) is pruned, never an error, because the
// same schemas serve objects straight from the Kubernetes API.

type Schema = Record<string, unknown>;

// DNS-1123 subdomain (most object names) and label (namespace names), as Kubernetes validates them.
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

const stringMap: Schema = { type: 'object', additionalProperties: { type: 'string' } };

/** ObjectMeta as in the model; `validateObject` picks these fields before validating. */
export function metadataSchema(nameIsLabel: boolean): Schema {
  return {
    type: 'object',
    required: ['name'],
    properties: {
      name: nameIsLabel
        ? { type: 'string', pattern: DNS_LABEL, maxLength: 63 }
        : { type: 'string', pattern: DNS_SUBDOMAIN, maxLength: 253 },
      namespace: { type: 'string', pattern: DNS_LABEL, maxLength: 63 },
      labels: stringMap,
      annotations: stringMap,
      uid: { type: 'string' },
      resourceVersion: { type: 'string' },
      generation: { type: 'integer' },
    },
  };
}

const port: Schema = { type: 'integer', minimum: 1, maximum: 65535 };

// Prunes unlisted fields (see pruning in validate.ts) at every level.
function obj(properties: Record<string, Schema>, required: string[] = []): Schema {
  return { type: 'object', properties, required, additionalProperties: false };
}
function arrayOf(items: Schema): Schema {
  return { type: 'array', items };
}

const serviceSpec = obj({
  selector: stringMap,
  ports: arrayOf(
    obj(
      {
        name: { type: 'string' },
        port,
        // int-or-string: a number, or the name of a container port.
        targetPort: { type: ['integer', 'string'] },
        protocol: { type: 'string', enum: ['TCP', 'UDP', 'SCTP'] },
        appProtocol: { type: 'string' },
      },
      ['port'],
    ),
  ),
  clusterIP: { type: 'string' },
  type: { type: 'string' },
});

const podSpec = obj({
  serviceAccountName: { type: 'string' },
  nodeName: { type: 'string' },
  hostNetwork: { type: 'boolean' },
  containers: arrayOf(
    obj(
      {
        name: { type: 'string' },
        image: { type: 'string' },
        ports: arrayOf(
          obj({ name: { type: 'string' }, containerPort: port, protocol: { type: 'string' } }, [
            'containerPort',
          ]),
        ),
      },
      ['name'],
    ),
  ),
});

const podStatus = obj({
  phase: { type: 'string' },
  podIP: { type: 'string' },
  podIPs: arrayOf(obj({ ip: { type: 'string' } }, ['ip'])),
  conditions: arrayOf(obj({ type: { type: 'string' }, status: { type: 'string' } }, ['type', 'status'])),
});

const endpointSliceFields: Record<string, Schema> = {
  addressType: { type: 'string', enum: ['IPv4', 'IPv6', 'FQDN'] },
  // The API omits an empty list; the model always has one.
  endpoints: {
    ...arrayOf(
      obj(
        {
          addresses: arrayOf({ type: 'string' }),
          conditions: obj({
            ready: { type: 'boolean' },
            serving: { type: 'boolean' },
            terminating: { type: 'boolean' },
          }),
          targetRef: obj(
            { kind: { type: 'string' }, name: { type: 'string' }, namespace: { type: 'string' } },
            ['kind', 'name'],
          ),
          nodeName: { type: 'string' },
        },
        ['addresses'],
      ),
    ),
    default: [],
  },
  ports: arrayOf(
    obj({
      name: { type: 'string' },
      port,
      protocol: { type: 'string' },
      appProtocol: { type: 'string' },
    }),
  ),
};

const ingressBackendRef = obj({
  service: obj(
    {
      name: { type: 'string', minLength: 1 },
      port: obj({ number: port, name: { type: 'string', minLength: 1 } }),
    },
    ['name'],
  ),
});

// networking.k8s.io/v1 Ingress: the fields skein reads as policy input.
const ingressSpec = obj({
  ingressClassName: { type: 'string' },
  defaultBackend: ingressBackendRef,
  rules: arrayOf(
    obj({
      host: { type: 'string' },
      http: obj(
        {
          paths: arrayOf(
            obj(
              {
                path: { type: 'string' },
                pathType: { type: 'string', enum: ['Exact', 'Prefix', 'ImplementationSpecific'] },
                backend: ingressBackendRef,
              },
              ['pathType', 'backend'],
            ),
          ),
        },
        ['paths'],
      ),
    }),
  ),
  tls: arrayOf(obj({ hosts: arrayOf({ type: 'string' }), secretName: { type: 'string' } })),
});

export interface CoreKind {
  apiVersion: string;
  kind: string;
  namespaced: boolean;
  /** Top-level fields besides apiVersion, kind and metadata. */
  fields: Record<string, Schema>;
  required: string[];
}

export const CORE_KINDS: readonly CoreKind[] = [
  { apiVersion: 'v1', kind: 'Namespace', namespaced: false, fields: {}, required: [] },
  { apiVersion: 'v1', kind: 'ServiceAccount', namespaced: true, fields: {}, required: [] },
  { apiVersion: 'v1', kind: 'Service', namespaced: true, fields: { spec: serviceSpec }, required: ['spec'] },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    namespaced: true,
    fields: { spec: podSpec, status: podStatus },
    required: ['spec'],
  },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    namespaced: true,
    fields: endpointSliceFields,
    required: ['addressType', 'endpoints'],
  },
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    namespaced: true,
    fields: { spec: ingressSpec },
    required: ['spec'],
  },
];
