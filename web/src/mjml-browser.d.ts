// mjml-browser ships no types; the editor casts what it calls (web/src/email-editor/editor.tsx).
declare module "mjml-browser" {
  const mjml2html: unknown;
  export default mjml2html;
}
