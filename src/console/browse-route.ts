import type { BrowseSettings } from "./data-query.ts";
import type { BrowseFilters } from "./route.ts";

/** The data page's settings as the hash holds them (defaults left out, so a plain link stays plain). */
export const browseFiltersOf = (settings: BrowseSettings, pageSize: number): BrowseFilters => ({
  where: settings.where.trim() || undefined,
  orderBy: settings.orderBy || undefined,
  direction: settings.direction === "desc" ? "desc" : undefined,
  limit: settings.limit === pageSize ? undefined : String(settings.limit),
});

export const browseSettingsOf = (filters: BrowseFilters | undefined, pageSize: number): BrowseSettings => ({
  where: filters?.where ?? "",
  orderBy: filters?.orderBy ?? "",
  direction: filters?.direction === "desc" ? "desc" : "asc",
  limit: Number(filters?.limit) > 0 ? Number(filters?.limit) : pageSize,
});
