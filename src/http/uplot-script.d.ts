// uPlot's minified script, imported as a file (`with { type: "file" }`: its path, embedded in the binary)
// to be served apart from the console's bundle.
declare module "uplot/dist/uPlot.iife.min.js" {
  const path: string;
  export default path;
}
