// Field readers shared by the SotW and Delta codecs. protobufjs's toObject
// yields untyped objects, so every field is read through a type guard; and the
// two request kinds share node (xDS rule 5) and error_detail (a NACK, rule 3).

/** The fields both request kinds carry. */
export interface CommonRequestFields {
  node?: { id: string; cluster: string };
  errorDetail?: { code: number; message: string };
}

export function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v))
    : undefined;
}

export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

export function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(str) : [];
}

/** Adds node and error_detail to a request object about to be encoded, when set. */
export function writeCommonFields(req: CommonRequestFields, msg: Record<string, unknown>): void {
  if (req.node) msg['node'] = { id: req.node.id, cluster: req.node.cluster };
  if (req.errorDetail) msg['error_detail'] = { code: req.errorDetail.code, message: req.errorDetail.message };
}
