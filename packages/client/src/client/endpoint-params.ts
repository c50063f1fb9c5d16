// The parameters of the client's endpoint methods: team, paging and each list's filters.

export interface TeamOption {
  /** `Service-Team` for this call; overrides the client's default. */
  team?: string;
}
export interface PageParams extends TeamOption {
  /** 1 to 100, default 25. */
  limit?: number;
  /** `next_cursor` of the previous page of the same endpoint, filters and team. */
  cursor?: string;
}
export interface LeadsParams extends PageParams {
  board?: string;
  stage?: string;
  status?: string;
}
export interface LeadFilterParams extends PageParams {
  /** Only records linked to this lead. */
  lead?: string;
}
export interface SearchLeadsParams extends TeamOption {
  email?: string;
  phone?: string;
  limit?: number;
  cursor?: string;
}
export interface ChangesParams extends TeamOption {
  /** Omit to start an initial sync of every record of the team. */
  cursor?: string;
  /** 1 to 100; 100 is recommended for an initial sync. */
  limit?: number;
}
