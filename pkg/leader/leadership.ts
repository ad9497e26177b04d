/**
 * Whether singleton work (caBundle upkeep, Events, status conditions, Secret
 * collection) may run on this replica now. The LeaseElector is one; a lone
 * controller (local mode, --leader-elect=false) is always leader.
 */
export interface Leadership {
  readonly isLeader: boolean;
}

export const ALWAYS_LEADER: Leadership = { isLeader: true };
