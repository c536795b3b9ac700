/** parse-prometheus-text-format ships no types: the parser as its README documents it (used by tests only). */
declare module "parse-prometheus-text-format" {
  export default function parsePrometheusTextFormat(text: string): unknown[];
}
