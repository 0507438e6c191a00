/** The part of `negotiator` (jshttp; it ships no types) that the sign-in pages use. */
declare module 'negotiator' {
  class Negotiator {
    constructor(request: { headers: Record<string, string | string[] | undefined> });
    /** The languages the request accepts, most preferred first (q=0 left out); `available` filters them. */
    languages(available?: string[]): string[];
  }
  export default Negotiator;
}
