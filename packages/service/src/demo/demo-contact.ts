import { PRIORITIES } from '../schemas/enums.js';
import type { CaptureInput } from '../write/events/event-fields.js';
import type { CrmEvent, EventOf } from '../write/events/events.js';
import type { DemoRandom } from './demo-random.js';
import type { TeamPlan } from './demo-team.js';

// Who a demo lead is and where they came from: name, phone in every shape, contact permissions and
// source with its attribution capture.

/**
 * The k-th variant of a list: the first leads of a team walk every variant in order (so a small
 * demo still shows each), later ones draw at random with the given weights.
 */
export function variant<T>(rng: DemoRandom, values: readonly T[], index: number, weights?: readonly number[]): T {
  if (index < values.length) return values[index]!;
  if (!weights) return rng.pick(values);
  return rng.faker.helpers.weightedArrayElement(values.map((value, i) => ({ value, weight: weights[i] ?? 1 })));
}

const PHONE_SHAPES = [
  'valid',
  'valid_other_country',
  'missing',
  'national_without_plus',
  'digits_without_plus',
  'too_short',
] as const;
const PHONE_WEIGHTS = [70, 10, 8, 5, 4, 3];

/** A raw phone as a member or a form stored it; `phone_status` follows from its shape. */
function rawPhone(rng: DemoRandom, plan: TeamPlan, index: number): string | null {
  const shape = variant(rng, PHONE_SHAPES, index, PHONE_WEIGHTS);
  const country = shape === 'valid_other_country' ? rng.pick(['FR', 'NL', 'GB'] as const) : plan.country;
  switch (shape) {
    case 'missing':
      return null;
    case 'national_without_plus':
      // Stored without its country prefix: cannot be placed without a default country.
      return `0151 ${rng.digits(8)}`;
    case 'digits_without_plus':
      return `49151${rng.digits(8)}`;
    case 'too_short':
      return `+49 12${rng.digits(2)}`;
    default:
      switch (country) {
        case 'DE':
          return `+49 151 ${rng.digits(8)}`;
        case 'ES':
          return `+34 6${rng.digits(2)} ${rng.digits(3)} ${rng.digits(3)}`;
        case 'US':
          return `+1 212 555 01${rng.digits(2)}`;
        case 'FR':
          return `+33 6 ${rng.digits(2)} ${rng.digits(2)} ${rng.digits(2)} ${rng.digits(2)}`;
        case 'NL':
          return `+31 6 ${rng.digits(8)}`;
        case 'GB':
          return `+44 20 7946 ${rng.digits(4)}`;
      }
  }
}

type Permissions = Pick<EventOf<'lead.created'>, 'do_not_contact' | 'email_opt_out' | 'whatsapp_consent'>;
const CONSENTS: readonly Permissions[] = [
  {},
  { whatsapp_consent: true },
  { whatsapp_consent: false },
  { email_opt_out: true, whatsapp_consent: true },
  { do_not_contact: true, whatsapp_consent: false },
  { do_not_contact: true, email_opt_out: true, whatsapp_consent: null },
];
const CONSENT_WEIGHTS = [40, 35, 8, 8, 5, 4];

/** Source, channel and detail combinations seen in the CRM. */
const SOURCES = [
  { source: 'platform_lead_ads', source_channel: 'facebook', source_detail: 'gated_ad:facebook', ads: true },
  { source: 'website_form', source_channel: 'widget', source_detail: null, ads: false },
  { source: 'manual', source_channel: 'phone', source_detail: null, ads: false },
  { source: 'api', source_channel: 'whatsapp', source_detail: 'conversation', ads: false },
  { source: 'api', source_channel: 'phone', source_detail: 'call', ads: false },
  { source: 'booking_page', source_channel: 'widget', source_detail: null, ads: false },
  { source: 'csv_import', source_channel: null, source_detail: null, ads: false },
  { source: 'api', source_channel: null, source_detail: 'api_intake', ads: false },
  { source: 'api', source_channel: 'email', source_detail: 'external:zapier', ads: false },
  { source: 'platform_lead_ads', source_channel: 'instagram', source_detail: 'gated_ad:instagram', ads: true },
  { source: null, source_channel: null, source_detail: null, ads: false },
] as const;
const SOURCE_WEIGHTS = [25, 20, 15, 10, 6, 6, 5, 4, 3, 5, 1];

export type LeadSourceChoice = (typeof SOURCES)[number];

const CAMPAIGNS = ['Spring offer', 'Free consultation', 'Retargeting Q2', 'Brand awareness'] as const;

/** What the ad platform reported when an ad lead first entered the CRM. */
function adCapture(rng: DemoRandom, channel: string, at: string): CaptureInput {
  const idName = (name: string) => ({ id: rng.digits(15), name });
  return {
    received_at: at,
    submitted_at: at,
    source: 'platform_lead_ads',
    source_hint: channel,
    source_channel: channel,
    external_provider: 'meta',
    origin: 'lead_form',
    campaign: idName(rng.pick(CAMPAIGNS)),
    ad: idName(`Ad ${rng.int(1, 9)}`),
    ad_set: idName(rng.pick(['Lookalike 1%', 'Interests: home', 'Broad 25-54'])),
    form: idName(rng.pick(['Contact form', 'Quote request'])),
    page: idName('Company page'),
    ad_group: { id: null },
    creative: { id: rng.digits(12) },
    asset_group: { id: null },
    click_network: channel,
    audience: null,
    utm: { utm_source: channel, utm_medium: 'paid_social', utm_campaign: 'spring' },
    ad_referral: null,
  };
}

/** A form on the team's website reports utm tags and the page, not an ad. */
function formCapture(rng: DemoRandom, at: string): CaptureInput {
  return {
    received_at: at,
    submitted_at: at,
    source: 'website_form',
    source_channel: 'widget',
    origin: rng.pick(['https://example.com/contact', 'https://example.com/pricing']),
    utm: rng.chance(0.5) ? { utm_source: 'google', utm_medium: 'cpc' } : null,
  };
}

/** The `lead.created` of a new person (status, place and assignees are set by the caller). */
export function newPerson(
  rng: DemoRandom,
  plan: TeamPlan,
  index: number,
  lead: string,
  at: string,
): { fields: Omit<EventOf<'lead.created'>, 'status' | 'stage' | 'assignees' | 'actor'>; source: LeadSourceChoice } {
  const first = rng.faker.person.firstName();
  const last = rng.faker.person.lastName();
  const source = variant(rng, SOURCES, index, SOURCE_WEIGHTS);
  const hasEmail = rng.chance(0.85);
  const capture = source.ads
    ? adCapture(rng, source.source_channel, at)
    : source.source === 'website_form'
      ? formCapture(rng, at)
      : null;
  return {
    source,
    fields: {
      type: 'lead.created',
      at,
      team: plan.team,
      lead,
      name: first,
      surname: rng.chance(0.9) ? last : null,
      email: hasEmail ? rng.faker.internet.email({ firstName: first, lastName: last }).toLowerCase() : null,
      company: rng.chance(0.4) ? rng.faker.company.name() : null,
      phone: rawPhone(rng, plan, index),
      priority: rng.chance(0.6) ? rng.pick(PRIORITIES) : null,
      tags: rng.some(['lead', 'booking', 'vip', 'returning', 'newsletter'], 0, 2),
      estimated_value: rng.chance(0.7) ? rng.int(5, 400) * 50 : null,
      source: source.source,
      source_channel: source.source_channel,
      source_detail: source.source_detail,
      ...variant(rng, CONSENTS, index, CONSENT_WEIGHTS),
      capture,
    },
  };
}

/**
 * Ad submissions of an ad lead: the first one, sometimes a repeat on the existing contact, and
 * sometimes a repeat the platform reports deleted (the older one shows again). `nth` counts the
 * team's ad leads so the first three show each shape.
 */
export function submissions(rng: DemoRandom, lead: string, firstAt: string, laterAt: string, nth: number): CrmEvent[] {
  const submit = (submission: string, at: string): CrmEvent => ({
    type: 'submission.received',
    at,
    submission,
    lead,
    submitted_at: at,
    external_provider: 'meta',
    campaign: { id: rng.digits(15), name: rng.pick(CAMPAIGNS) },
    ad: { id: rng.digits(15), name: `Ad ${rng.int(1, 9)}` },
    form: { id: rng.digits(15), name: 'Contact form' },
  });
  const events = [submit(rng.internalId('sub'), firstAt)];
  const shape = variant(rng, ['repeat', 'repeat_deleted', 'single'] as const, nth, [2, 1, 7]);
  if (shape !== 'single') {
    const repeat = rng.internalId('sub');
    events.push(submit(repeat, laterAt));
    if (shape === 'repeat_deleted') events.push({ type: 'submission.deleted', at: laterAt, submission: repeat });
  }
  return events;
}
