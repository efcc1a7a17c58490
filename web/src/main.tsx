/**
 * Start-up: read the server's description of the application, complete a sign-in that comes back to
 * /callback, sign in again after a reload (the server remembers the browser, so this is two redirects),
 * then show the application.
 */
import { StrictMode, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';
import { Alert, Button, Center, MantineProvider, Paper, Stack, Text, Title, createTheme, type CSSVariablesResolver } from '@mantine/core';
import '@mantine/core/styles.css';
import './app.css';
import { App } from './App.tsx';
import { completeSignIn, currentTokens, lastChoice, loadConfig, signIn } from './session.ts';
import { basePath } from './url-state.ts';

const theme = createTheme({
  primaryColor: 'blue',
  // Shade 8 keeps white text on filled buttons above 4.5:1 in both themes (WCAG 2.1 AA).
  primaryShade: { light: 8, dark: 8 },
  autoContrast: true,
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
});

// Secondary text (field descriptions, placeholders) darker than Mantine's default grey, for 4.5:1.
const contrast: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': '#495057', '--mantine-color-placeholder': '#5c636a' },
  dark: { '--mantine-color-dimmed': '#c9c9c9', '--mantine-color-placeholder': '#b8b8b8' },
});

const root = createRoot(document.getElementById('root')!);

function render(node: ReactNode) {
  root.render(
    <StrictMode>
      <MantineProvider theme={theme} defaultColorScheme="auto" cssVariablesResolver={contrast}>
        {node}
      </MantineProvider>
    </StrictMode>,
  );
}

function Landing({ error }: { error?: string }) {
  return (
    <Center mih="100vh" p="md" component="main">
      <Paper withBorder shadow="sm" p="xl" maw={420}>
        <Stack>
          <Title order={1}>Dirigo</Title>
          <Text>Jobs, their sandboxes and the file catalogue. Sign in with your certificate, your password or your home organisation.</Text>
          {error && (
            <Alert color="red" role="alert" title="Sign-in failed">
              {error}
            </Alert>
          )}
          {/* Back to the address opened (a shared link), not to the start page. */}
          <Button onClick={() => void signIn()}>Sign in</Button>
        </Stack>
      </Paper>
    </Center>
  );
}

async function start(): Promise<void> {
  const config = await loadConfig();
  // Signing in returns to the public URL: work there, so that the sign-in's state is found on return.
  if (location.origin !== new URL(config.publicUrl).origin) {
    location.replace(`${config.publicUrl}${location.pathname}${location.search}`);
    return;
  }
  const here = new URL(location.href);
  if (here.pathname === `${basePath()}callback`) {
    try {
      const returnTo = await completeSignIn(here);
      history.replaceState(null, '', returnTo);
    } catch (e) {
      history.replaceState(null, '', basePath());
      render(<Landing error={(e as Error).message} />);
      return;
    }
  }
  if (!currentTokens()) {
    const last = lastChoice();
    if (last) await signIn(last);
    render(<Landing />);
    return;
  }
  render(<App />);
}

start().catch((e: Error) => render(<Landing error={e.message} />));
