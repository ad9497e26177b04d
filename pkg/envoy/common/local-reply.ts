// The HCM local_reply_config skein uses for its own refusals: a body that says why.

import type { LocalReplyConfig } from '../api/envoy.js';
import { ComparisonOp } from './enums.js';

/**
 * An HCM `local_reply_config` giving Envoy's own replies of one status this
 * body (substitution format). Only local replies are rewritten, never the
 * app's responses.
 */
export function localReplyBody(status: number, body: string): LocalReplyConfig {
  return {
    mappers: [
      {
        filter: {
          status_code_filter: {
            comparison: {
              op: ComparisonOp.EQ,
              // RuntimeUInt32 requires a runtime key (PGV min_len 1); nothing sets it.
              value: { default_value: status, runtime_key: `skein.local_reply.status_${status}` },
            },
          },
        },
        body_format_override: { text_format_source: { inline_string: body } },
      },
    ],
  };
}
