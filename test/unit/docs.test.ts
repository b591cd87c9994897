import { describe, expect, it } from 'vitest';

import { anchors, brokenLinks, linkTargets, markdownFiles, readDoc, slug } from '../markdown';

/**
 * The README stays a short way in (what the service is, the two commands, a quick start, the
 * settings that matter, links); the contract and the references live in docs/, and every link
 * between them leads somewhere.
 */
describe('README.md', () => {
  it('has at most 450 lines', () => {
    const lines = readDoc('README.md').split('\n');
    if (lines.at(-1) === '') lines.pop();
    expect(lines.length, 'README.md is the way in: move the detail into docs/ and link to it').toBeLessThanOrEqual(450);
  });

  it('opens with the two commands, and pipes the command line’s JSON through npm run -s', () => {
    const readme = readDoc('README.md');
    expect(readme).toContain(
      '```sh\nnpm install && npm start     # the service on http://localhost:3000, embedded database, nothing else needed\n' +
        'npm install && npm test      # the tests\n```',
    );
    expect(readme).toContain('npm run -s admin -- company:list --json | jq .');
    // Without -s, npm prints its banner ("> claims-registry@… admin") on stdout before the JSON.
    const jsonWithoutSilent = readme.split('\n').filter((l) => /--json\b/.test(l) && !/npm run -s admin --/.test(l));
    expect(jsonWithoutSilent).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  it('names every variable of .env.example', () => {
    const variables = [...readDoc('.env.example').matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    expect(variables).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'DOCUMENT_HASH_KEY']));
    const configuration = readDoc('docs/configuration.md');
    expect(variables.filter((v) => !configuration.includes(`\`${v}\``))).toEqual([]);
  });
});

describe('relative links in README.md and docs/*.md', () => {
  it('each lead to an existing file, and an #anchor into Markdown to an existing heading', () => {
    const files = markdownFiles();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/api.md', 'docs/operations.md', 'docs/configuration.md']));
    const broken = files.flatMap((file) => brokenLinks(file).map((b) => `${file}: ${b}`));
    expect(broken).toEqual([]);
  });

  it('are found and checked: a missing file, a missing heading and a good link are told apart', () => {
    const text = [
      '# Title',
      '## Same',
      '## Same',
      '### Session secret (`SESSION_SECRET`)',
      '[ok](api.md#errors) [self](#same-1) [dir](screenshots) [web](https://example.com/x) [service](/docs)',
      '[gone](nowhere.md) [no heading](api.md#no-such-heading) [self gone](#same-2)',
      '```',
      '[in code](nowhere-either.md)',
      '```',
      '`[in code](nor-this.md)`',
    ].join('\n');
    expect(linkTargets(text)).toHaveLength(8);
    expect(anchors(text)).toEqual(new Set(['title', 'same', 'same-1', 'session-secret-session_secret']));
    expect(brokenLinks('docs/probe.md', text)).toEqual([
      'nowhere.md: docs/nowhere.md does not exist',
      'api.md#no-such-heading: docs/api.md has no heading #no-such-heading',
      '#same-2: docs/probe.md has no heading #same-2',
    ]);
  });

  it('make anchors as GitHub does', () => {
    expect(slug('Quick start: from clone to a 201')).toBe('quick-start-from-clone-to-a-201');
    expect(slug('Chunks side by side (`IMPORT_WRITERS`)')).toBe('chunks-side-by-side-import_writers');
    expect(slug('A lost database connection: requests that waited for ever')).toBe(
      'a-lost-database-connection-requests-that-waited-for-ever',
    );
  });
});
