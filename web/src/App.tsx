/**
 * The frame of every page: header (name, group switch, theme, sign-out), navigation, and the page the
 * address names.
 */
import { lazy, Suspense, useEffect, useState } from 'react';
import { ActionIcon, AppShell, Burger, Button, Group, Loader, NavLink, Select, Text, Tooltip, UnstyledButton, useComputedColorScheme, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { api, unwrap } from './api.ts';
import { currentTokens, onTokens, signIn, signOut } from './session.ts';
import { navigate, useLocation } from './url-state.ts';
import { JobMonitor } from './jobs/JobMonitor.tsx';
import { SubmitPage } from './jobs/SubmitPage.tsx';
import { SharesPage } from './jobs/SharesPage.tsx';
import { CataloguePage } from './catalogue/CataloguePage.tsx';
import { AccountPage } from './account/AccountPage.tsx';
import { SitesPage } from './sites/SitesPage.tsx';
import { PilotsPage } from './pilots/PilotsPage.tsx';
import { WorkflowPage } from './workflows/WorkflowPage.tsx';
import { WorkflowsPage } from './workflows/WorkflowsPage.tsx';
import { RegistryPage } from './registry/RegistryPage.tsx';

// The Accounting page brings the charts library: loaded when first shown, so the other pages stay light.
const AccountingPage = lazy(() => import('./accounting/AccountingPage.tsx').then((m) => ({ default: m.AccountingPage })));

const PAGES = [
  { page: '', label: 'Job monitor' },
  { page: 'workflows', label: 'Workflows' },
  { page: 'submit', label: 'Submit' },
  { page: 'shares', label: 'Fair share' },
  { page: 'catalogue', label: 'File catalogue' },
  { page: 'sites', label: 'Sites' },
  { page: 'pilots', label: 'Pilots' },
  { page: 'accounting', label: 'Accounting' },
  { page: 'registry', label: 'Registry' },
  { page: 'account', label: 'Account' },
] as const;

function ThemeToggle() {
  const { setColorScheme } = useMantineColorScheme();
  const scheme = useComputedColorScheme('light');
  const next = scheme === 'dark' ? 'light' : 'dark';
  return (
    <Tooltip label={`Switch to the ${next} theme`}>
      <ActionIcon variant="default" size="lg" aria-label={`Switch to the ${next} theme`} onClick={() => setColorScheme(next)}>
        {scheme === 'dark' ? '☀' : '☾'}
      </ActionIcon>
    </Tooltip>
  );
}

/**
 * One token per group: choosing another group asks the server for a token of that group. In the header
 * from tablet width up; on a phone in the navigation, so that the header keeps room for Sign out.
 */
function GroupSwitch({ where }: { where: 'header' | 'navbar' }) {
  const [groups, setGroups] = useState<string[]>([]);
  const group = currentTokens()?.group ?? '';
  useEffect(() => {
    void api.GET('/oauth2/account').then((r) => setGroups(unwrap(r).groups.map((g) => g.name)));
  }, [group]);
  return (
    <Select
      aria-label="Group"
      size="xs"
      w={where === 'header' ? 150 : undefined}
      mb={where === 'navbar' ? 'xs' : undefined}
      {...(where === 'header' ? { visibleFrom: 'sm' } : { hiddenFrom: 'sm' })}
      data={groups.length ? groups : [group]}
      value={group}
      allowDeselect={false}
      onChange={(g) => g && g !== group && void signIn({ group: g, setup: currentTokens()?.setup })}
      data-testid="group-switch"
    />
  );
}

/** A page's own address and those below it (`workflows` and `workflows/7`) belong to its navigation entry. */
const isUnder = (page: string, entry: string) => page === entry || (entry !== '' && page.startsWith(`${entry}/`));

function Page({ page, params }: { page: string; params: URLSearchParams }) {
  const workflow = /^workflows\/(\d+)$/.exec(page);
  if (workflow) return <WorkflowPage key={workflow[1]} wid={Number(workflow[1])} />;
  const registry = /^registry(?:\/(\w+))?$/.exec(page);
  if (registry) return <RegistryPage tab={registry[1] ?? ''} params={params} />;
  switch (page) {
    case 'workflows':
      return <WorkflowsPage />;
    case 'submit':
      return <SubmitPage />;
    case 'shares':
      return <SharesPage />;
    case 'catalogue':
      return <CataloguePage params={params} />;
    case 'sites':
      return <SitesPage />;
    case 'pilots':
      return <PilotsPage params={params} />;
    case 'accounting':
      return (
        <Suspense fallback={<Loader size="sm" role="status" aria-label="Loading the Accounting page" />}>
          <AccountingPage params={params} />
        </Suspense>
      );
    case 'account':
      return <AccountPage />;
    default:
      return <JobMonitor params={params} />;
  }
}

export function App() {
  const { page, params } = useLocation();
  const [opened, { toggle, close }] = useDisclosure();
  // A refresh or group switch changes the tokens: the header shows the new group.
  const [, rerender] = useState(0);
  useEffect(() => onTokens(() => rerender((n) => n + 1)), []);
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 210, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="xs" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Navigation" />
            <UnstyledButton onClick={() => navigate('')} aria-label="Dirigo, job monitor">
              <Text fw={800} size="lg">
                Dirigo
              </Text>
            </UnstyledButton>
          </Group>
          <Group gap="xs" wrap="nowrap">
            <GroupSwitch where="header" />
            <ThemeToggle />
            <Button variant="default" size="xs" onClick={() => void signOut()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Pages">
        <GroupSwitch where="navbar" />
        {PAGES.map((p) => (
          <NavLink
            key={p.page}
            label={p.label}
            active={isUnder(page, p.page)}
            // Filled: the light variant's blue on pale blue is below 4.5:1.
            variant="filled"
            aria-current={isUnder(page, p.page) ? 'page' : undefined}
            onClick={() => {
              navigate(p.page);
              close();
            }}
            component="button"
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        <Page page={page} params={params} />
      </AppShell.Main>
    </AppShell>
  );
}
