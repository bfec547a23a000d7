/** @jsxImportSource preact */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ActionsPage } from "./actions.tsx";
import { takeRedirect } from "./built-in-sign-in.ts";
import { DataPage } from "./data.tsx";
import { ExecutionsPage } from "./executions.tsx";
import { FilesPage } from "./files.tsx";
import { useListKeys } from "./keyboard.ts";
import { OverviewPage } from "./overview.tsx";
import { ReleasesPage } from "./releases.tsx";
import { hrefOf, type Route, useRoute } from "./route.ts";
import { RunsPage } from "./runs.tsx";
import { Search } from "./search.tsx";
import { ServiceConsole } from "./service.tsx";
import { onServiceApex } from "./service-api.ts";
import { SignIn } from "./sign-in.tsx";
import { SignInsPage } from "./sign-ins.tsx";
import { useSignedIn } from "./signed-in.ts";
import { LoadingState } from "./ui.tsx";
import { useCallerKind } from "./use-caller-kind.ts";
import { VariablesPage } from "./variables.tsx";

// A user is refused what `serviceKeys` pages show: their links wait until the caller is known to be a key.
const PAGES: { route: Route; label: string; serviceKeys?: true }[] = [
  { route: { page: "overview" }, label: "Overview" },
  { route: { page: "actions" }, label: "Actions" },
  { route: { page: "executions" }, label: "Executions" },
  { route: { page: "runs" }, label: "Runs" },
  { route: { page: "data" }, label: "Data" },
  { route: { page: "files" }, label: "Files" },
  { route: { page: "releases" }, label: "Releases", serviceKeys: true },
  { route: { page: "variables" }, label: "Variables", serviceKeys: true },
  { route: { page: "sign-ins" }, label: "Signed-in apps" },
];

function Console() {
  const { client, signIn, signOut, notice } = useSignedIn();
  const route = useRoute();
  const kind = useCallerKind(client);
  useListKeys();
  if (!client) return <SignIn onSignedIn={signIn} notice={notice} />;
  return (
    <>
      <header>
        <strong>Actuate</strong>
        <nav aria-label="Pages">
          {PAGES.filter((p) => !p.serviceKeys || kind === "service").map((p) => (
            <a key={p.label} href={hrefOf(p.route)} aria-current={route.page === p.route.page ? "page" : undefined}>
              {p.label}
            </a>
          ))}
        </nav>
        <Search client={client} />
        <button type="button" class="secondary who" onClick={() => signOut(null)}>
          Sign out
        </button>
      </header>
      {route.page === "overview" && <OverviewPage client={client} />}
      {route.page === "actions" && <ActionsPage client={client} action={route.action} from={route.from} />}
      {route.page === "executions" && (
        <ExecutionsPage client={client} id={route.id} filters={route.filters ?? {}} byCaller={kind === "service"} />
      )}
      {route.page === "runs" && <RunsPage client={client} id={route.id} filters={route.filters} />}
      {route.page === "releases" && <ReleasesPage client={client} />}
      {route.page === "data" && <DataPage client={client} entity={route.entity} browse={route.browse} />}
      {route.page === "files" && <FilesPage key={route.prefix} client={client} prefix={route.prefix} />}
      {route.page === "sign-ins" && <SignInsPage client={client} />}
      {route.page === "variables" && <VariablesPage />}
    </>
  );
}

/** The service's console on the apex (hosting mode), an environment's anywhere else; a loading state until known. */
function Site() {
  const [apex, setApex] = useState<boolean | null>(null);
  useEffect(() => {
    onServiceApex().then(setApex, () => setApex(false));
  }, []);
  // The same markup index.html paints before the script runs: the first paint is not a blank page.
  if (apex === null)
    return (
      <main>
        <LoadingState what="the console" />
      </main>
    );
  return apex ? <ServiceConsole /> : <Console />;
}

// Before the first render: the sign-in's code leaves the address bar at once.
takeRedirect();
const root = document.getElementById("root");
if (root) render(<Site />, root);
// Bun's dev server (`bun run dev`, development mode): a change to any module of the page renders it again
// in place. A production bundle (the binary) has no `import.meta.hot` and Bun drops this block.
if (import.meta.hot) {
  import.meta.hot.accept();
  import.meta.hot.on("bun:afterUpdate", () => {
    if (root) render(<Site />, root);
  });
}
