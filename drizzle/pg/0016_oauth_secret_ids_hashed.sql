-- The built-in authority now stores tokens, codes and sessions under a hash of their id: the rows
-- written before hold them in clear. They are dropped with the grants they served (every sign-in
-- ends: people sign in again once), not left readable in the table.
DELETE FROM "oauth_records" WHERE "model" IN ('AccessToken', 'AuthorizationCode', 'RefreshToken', 'RegistrationAccessToken', 'Session', 'Interaction', 'Grant');
