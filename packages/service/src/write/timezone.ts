/** Used when a team has neither a valid business-hours zone nor a default country (documented in docs/write-side.md). */
export const FALLBACK_TIMEZONE = 'Europe/Berlin';

/** True when `zone` is an IANA zone this runtime knows. */
export function isValidTimezone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
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
  if (businessHoursZone && isValidTimezone(businessHoursZone)) return businessHoursZone;
  const fromCountry = defaultCountry ? countryTimezone(defaultCountry) : null;
  return fromCountry ?? FALLBACK_TIMEZONE;
}
