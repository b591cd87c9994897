/**
 * Claims written by an import stay invisible until that import has completed: every read of
 * claims (API, dashboard, look-ups) adds this predicate, so an unfinished, failed or cancelled
 * import never shows a claim, and a completed one shows all of its claims at once.
 * `alias` is the claims table's alias in the query.
 */
export const visibleClaim = (alias: string) =>
  `(${alias}.import_id IS NULL OR EXISTS (SELECT 1 FROM imports vis_i WHERE vis_i.id = ${alias}.import_id AND vis_i.status = 'completed'))`;
