import { DEFAULT_MESH_NAME } from '../mesh/constants.js';
import type { FlagSpec } from './spec.js';

export const MESH_NAME_FLAG: FlagSpec = {
  name: 'mesh-name',
  type: 'string',
  valueName: 'name',
  description: 'Mesh name (the value of the skein.dev/monitored-by label)',
  defaultText: DEFAULT_MESH_NAME,
};

export const NAMESPACE_FLAG: FlagSpec = {
  name: 'namespace',
  short: 'n',
  type: 'string',
  valueName: 'ns',
  description: 'Namespace of the pods named in arguments',
  defaultText: 'default',
  complete: { kind: 'namespace' },
};
