/** The sign-in and consent pages: plain HTML forms, readable without scripts or styles of their own. */

const html = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${html(title)}</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 26rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5; }
  label { display: block; margin-top: 1rem; font-weight: 600; }
  input { display: block; width: 100%; box-sizing: border-box; padding: .5rem; margin-top: .25rem; font-size: 1rem; }
  button { margin-top: 1.25rem; padding: .5rem 1.25rem; font-size: 1rem; }
  .error { color: #a00; font-weight: 600; }
</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

export function signInPage(options: {
  action: string;
  csrf: string;
  /** What the person signs in to: the environment (single mode), or the service (hosting mode). */
  environment: string;
  /** The environments the client asks for, when the sign-in is the service's (hosting mode). */
  resources?: string;
  client: string;
  user?: string;
  error?: string;
}): string {
  const error = options.error ? `<p class="error" role="alert">${html(options.error)}</p>` : "";
  const where = options.resources ? `<strong>${html(options.resources)}</strong>` : "this environment";
  return page(
    `Sign in to ${options.environment}`,
    `<h1>Sign in to ${html(options.environment)}</h1>
<p><strong>${html(options.client)}</strong> asks to act as you in ${where}.</p>
${error}
<form method="post" action="${html(options.action)}">
  <input type="hidden" name="csrf" value="${html(options.csrf)}">
  <label for="user">User</label>
  <input id="user" name="user" autocomplete="username" required value="${html(options.user ?? "")}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
</form>`,
  );
}

export function consentPage(options: {
  confirm: string;
  abort: string;
  csrf: string;
  environment: string;
  client: string;
  user: string;
  /** The service itself was asked for (the apex console): its token only lists the person's environments. */
  listsOnly?: boolean;
}): string {
  const what = options.listsOnly
    ? `will see which environments of <strong>${html(options.environment)}</strong> you may open`
    : `will run actions and read data of <strong>${html(options.environment)}</strong> as you`;
  return page(
    `Allow ${options.client}?`,
    `<h1>Allow ${html(options.client)}?</h1>
<p>Signed in as <strong>${html(options.user)}</strong>.</p>
<p><strong>${html(options.client)}</strong> ${what}, until you revoke it.</p>
<form method="post" action="${html(options.confirm)}">
  <input type="hidden" name="csrf" value="${html(options.csrf)}">
  <button type="submit">Allow</button>
</form>
<form method="post" action="${html(options.abort)}">
  <input type="hidden" name="csrf" value="${html(options.csrf)}">
  <button type="submit">Deny</button>
</form>`,
  );
}

/** A person without access to the environment asked for (hosting mode: no grant): the way back tells the client. */
export function noAccessPage(options: {
  abort: string;
  csrf: string;
  environment: string;
  client: string;
  user: string;
}): string {
  return page(
    `No access to ${options.environment}`,
    `<h1>No access to ${html(options.environment)}</h1>
<p class="error" role="alert">Signed in as <strong>${html(options.user)}</strong>, who may not use <strong>${html(options.environment)}</strong>: an administrator of its organization can grant it.</p>
<form method="post" action="${html(options.abort)}">
  <input type="hidden" name="csrf" value="${html(options.csrf)}">
  <input type="hidden" name="reason" value="no-access">
  <button type="submit">Back to ${html(options.client)}</button>
</form>`,
  );
}
