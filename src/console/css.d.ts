// Stylesheets imported by components: Bun bundles them beside the page's own.
declare module "*.css";
