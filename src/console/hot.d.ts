// Bun's dev server API the page uses (bun-types has it; the page's own tsconfig loads no Bun types).
interface ImportMeta {
  readonly hot?: {
    accept(): void;
    on(event: "bun:afterUpdate", callback: () => void): void;
  };
}
