/** @jsxImportSource preact */
import { render } from "preact";
import { useMemo, useState } from "preact/hooks";
import { ActionsPage } from "./actions.tsx";
import { DataPage } from "./data.tsx";
import { ExecutionsPage } from "./executions.tsx";
import { FilesPage } from "./files.tsx";
import { OverviewPage } from "./overview.tsx";
import { ReleasesPage } from "./releases.tsx";
import { hrefOf, type Route, useRoute } from "./route.ts";
import { RunsPage } from "./runs.tsx";
import { clientFor, forgetCredential, storeCredential, storedCredential } from "./session.ts";
import { SignIn } from "./sign-in.tsx";

const PAGES: { route: Route; label: string }[] = [
  { route: { page: "overview" }, label: "Overview" },
  { route: { page: "actions" }, label: "Actions" },
  { route: { page: "executions" }, label: "Executions" },
  { route: { page: "runs" }, label: "Runs" },
  { route: { page: "data" }, label: "Data" },
  { route: { page: "files" }, label: "Files" },
  { route: { page: "releases" }, label: "Releases" },
];

function Console() {
  const [credential, setCredential] = useState(storedCredential);
  const route = useRoute();
  const client = useMemo(() => (credential ? clientFor(credential) : null), [credential]);
  if (!client)
    return (
      <SignIn
        onSignedIn={(c) => {
          storeCredential(c);
          setCredential(c);
        }}
      />
    );
  const signOut = () => {
    forgetCredential();
    client.close();
    setCredential(null);
  };
  return (
    <>
      <header>
        <strong>Actuate</strong>
        <nav aria-label="Pages">
          {PAGES.map((p) => (
            <a
              key={p.label}
              href={hrefOf(p.route)}
              aria-current={route.page === p.route.page ? "page" : undefined}
              style={{ marginRight: "1rem" }}
            >
              {p.label}
            </a>
          ))}
        </nav>
        <button type="button" class="secondary who" onClick={signOut}>
          Sign out
        </button>
      </header>
      {route.page === "overview" && <OverviewPage client={client} />}
      {route.page === "actions" && <ActionsPage client={client} action={route.action} />}
      {route.page === "executions" && <ExecutionsPage client={client} id={route.id} />}
      {route.page === "runs" && <RunsPage client={client} id={route.id} />}
      {route.page === "releases" && <ReleasesPage client={client} />}
      {route.page === "data" && <DataPage client={client} entity={route.entity} />}
      {route.page === "files" && <FilesPage client={client} />}
    </>
  );
}

const root = document.getElementById("root");
if (root) render(<Console />, root);
