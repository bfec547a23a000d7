// uPlot's minified script, imported as text (`with { type: "text" }`) to be served apart from the console's bundle.
declare module "uplot/dist/uPlot.iife.min.js" {
  const script: string;
  export default script;
}
