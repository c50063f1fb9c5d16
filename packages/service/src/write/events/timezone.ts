/** Used when a team has neither a valid business-hours zone nor a default country (documented in docs/write-side.md). */
export const FALLBACK_TIMEZONE = 'Europe/Berlin';

/**
 * The runtime's canonical name of an IANA zone given in any case (`europe/vienna` is `Europe/Vienna`),
 * from `Intl.DateTimeFormat#resolvedOptions`; null when the runtime does not know the zone.
 */
export function canonicalTimezone(zone: string): string | null {
  try {
    return new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/**
 * The zone of a country from the runtime's ICU data (`Intl.Locale#timeZones`). With several zones,
 * the one sharing the most common UTC offset wins, so a country reads the time most of it keeps;
 * ties go to the first zone ICU lists.
 */
export function countryTimezone(country: string): string | null {
  let zones: string[] | undefined;
  try {
    zones = (new Intl.Locale(`und-${country}`) as Intl.Locale & { timeZones?: string[] }).timeZones;
  } catch {
    return null;
  }
  if (!zones || zones.length === 0) return null;
  if (zones.length === 1) return zones[0] ?? null;
  const reference = Date.UTC(2026, 0, 15, 12);
  const offsets = new Map<string, string[]>();
  for (const zone of zones) {
    const offset = new Intl.DateTimeFormat('en', { timeZone: zone, timeZoneName: 'longOffset' })
      .formatToParts(reference)
      .find((p) => p.type === 'timeZoneName')?.value;
    const key = offset ?? zone;
    offsets.set(key, [...(offsets.get(key) ?? []), zone]);
  }
  let best: string[] = [];
  for (const group of offsets.values()) if (group.length > best.length) best = group;
  return best[0] ?? null;
}

/** The team's zone: business hours when valid, else the default country's zone, else the fixed default. */
export function teamTimezone(businessHoursZone: string | null, defaultCountry: string | null): string {
  const businessHours = businessHoursZone ? canonicalTimezone(businessHoursZone) : null;
  if (businessHours) return businessHours;
  const fromCountry = defaultCountry ? countryTimezone(defaultCountry) : null;
  return fromCountry ?? FALLBACK_TIMEZONE;
}
