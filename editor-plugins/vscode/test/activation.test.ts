// Activation with the `vscode` module stubbed: the extension registers its own
// `owt.ui.*` commands (every command package.json contributes), never the
// server-declared `owt.*` ones the language client registers itself, and the
// manifest's menus and settings are consistent with the code.

import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { ALL_COMMANDS } from '../src/protocol';

const EXTENSION_DIR = path.resolve(__dirname, '..', '..');

interface Manifest {
  main: string;
  activationEvents: string[];
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
    configuration: { properties: Record<string, { default?: unknown; enum?: string[] }> };
    views: Record<string, { id: string }[]>;
    viewsContainers: { activitybar: { id: string; icon: string }[] };
  };
}

const manifest = JSON.parse(fs.readFileSync(path.join(EXTENSION_DIR, 'package.json'), 'utf8')) as Manifest;

/**
 * A stand-in for any VS Code API object: every property is another stub,
 * calling or constructing one returns a stub. `overrides` pin real values.
 */
function stub(overrides: Record<string, unknown> = {}): unknown {
  const target = function () {
    /* callable */
  };
  return new Proxy(target, {
    get(_t, key) {
      if (typeof key === 'symbol') return key === Symbol.toPrimitive ? () => 'stub' : undefined;
      if (key in overrides) return overrides[key];
      if (key === 'then') return undefined; // not a thenable
      return stub();
    },
    set() {
      return true;
    },
    apply() {
      return stub();
    },
    construct() {
      return stub() as object;
    },
  });
}

function fakeVscode(registered: string[]): unknown {
  const disposable = { dispose: (): void => undefined };
  return stub({
    commands: stub({
      registerCommand: (id: string): unknown => {
        if (registered.includes(id)) throw new Error(`command '${id}' already exists`);
        registered.push(id);
        return disposable;
      },
      executeCommand: async (): Promise<undefined> => undefined,
    }),
    workspace: stub({
      workspaceFolders: undefined, // no folder: the client is not started
      getConfiguration: () => ({ get: <T>(_k: string, d: T): T => d }),
      onDidChangeConfiguration: () => disposable,
      onDidChangeWorkspaceFolders: () => disposable,
    }),
  });
}

describe('activation (vscode stubbed)', () => {
  it('registers every contributed command, and none of the server-declared ones', async () => {
    const registered: string[] = [];
    const vscode = fakeVscode(registered);
    const mod = Module as unknown as { _load: (r: string, p: unknown, m: boolean) => unknown };
    const realLoad = mod._load;
    mod._load = function (request: string, parent: unknown, isMain: boolean): unknown {
      if (request === 'vscode') return vscode;
      return realLoad.call(this, request, parent, isMain);
    };
    try {
      // The tsc output of src/extension.ts: manifest.main is its esbuild
      // bundle, which wraps `vscode` in a copy of its own keys (a stub has
      // none); the bundle itself runs in the e2e suite, in a real VS Code.
      const ext = require(path.join(EXTENSION_DIR, 'out', 'src', 'extension.js')) as {
        activate: (ctx: { subscriptions: { dispose(): void }[] }) => void;
        deactivate: () => Promise<void>;
      };
      const ctx = { subscriptions: [] as { dispose(): void }[] };
      ext.activate(ctx);
      const contributed = manifest.contributes.commands.map((c) => c.command).sort();
      assert.deepEqual([...registered].sort(), contributed);
      for (const id of ALL_COMMANDS) {
        assert.ok(!registered.includes(id), `${id} is registered by the language client; registering it again fails`);
        assert.ok(!contributed.includes(id), `${id} must not be contributed by package.json`);
      }
      await ext.deactivate();
      for (const d of ctx.subscriptions) d.dispose();
    } finally {
      mod._load = realLoad;
    }
  });
});

describe('package.json', () => {
  it('main is the bundle the .vsix ships (built by npm run build)', () => {
    assert.equal(manifest.main, './dist/extension.js');
    assert.ok(fs.existsSync(path.join(EXTENSION_DIR, manifest.main)), `${manifest.main} was not built`);
  });

  it('activates on startup, not on `*`', () => {
    assert.deepEqual(manifest.activationEvents, ['onStartupFinished']);
  });

  it('titles read "owt: New agent…" and "owt: Show board" in the palette', () => {
    const title = (id: string): string | undefined => {
      const c = manifest.contributes.commands.find((x) => x.command === id);
      return c ? `${c.category}: ${c.title}` : undefined;
    };
    assert.equal(title('owt.ui.newAgent'), 'owt: New agent…');
    assert.equal(title('owt.ui.showBoard'), 'owt: Show board');
  });

  it('menus only reference contributed commands', () => {
    const ids = new Set(manifest.contributes.commands.map((c) => c.command));
    for (const [menu, items] of Object.entries(manifest.contributes.menus)) {
      for (const item of items) assert.ok(ids.has(item.command), `${menu} references unknown ${item.command}`);
    }
  });

  it('row actions attach, peek, merge, ship, delete are inline on the Agents view', () => {
    const inline = manifest.contributes.menus['view/item/context'] ?? [];
    for (const action of ['attach', 'peek', 'merge', 'ship', 'delete']) {
      const item = inline.find((m) => m.command === `owt.ui.${action}` && (m as { group?: string }).group?.startsWith('inline'));
      assert.ok(item, `no inline ${action}`);
      assert.ok(item.when?.includes('view == owt.agents') && item.when.includes(`:${action}(:|$)`), `${action}: ${item.when}`);
    }
  });

  it('Resume is on the rows whose `resume` action is available only, and calls owt.resume', () => {
    const items = manifest.contributes.menus['view/item/context'] ?? [];
    const mine = items.filter((m) => m.command === 'owt.ui.resume');
    assert.ok(mine.length >= 1, 'no menu item for resume');
    for (const item of mine) assert.ok(item.when?.includes('view == owt.agents') && item.when.includes(':resume(:|$)'), `${item.when}`);
    const src = fs.readFileSync(path.join(__dirname, '..', '..', 'src', 'extension.ts'), 'utf8');
    assert.ok(/register\('owt\.ui\.resume'[\s\S]*?Commands\.resume/.test(src), 'owt.ui.resume sends owt.resume');
  });

  it('Approve… and Deny are on blocked ACP rows only (the server’s approve / deny actions)', () => {
    const items = manifest.contributes.menus['view/item/context'] ?? [];
    for (const action of ['approve', 'deny']) {
      const mine = items.filter((m) => m.command === `owt.ui.${action}`);
      assert.ok(mine.length >= 1, `no menu item for ${action}`);
      for (const item of mine) assert.ok(item.when?.includes(`:${action}(:|$)`), `${action}: ${item.when}`);
    }
  });

  it('declares the settings the extension reads', () => {
    const props = manifest.contributes.configuration.properties;
    assert.equal(props['owt.path']?.default, 'owt');
    for (const k of ['owt.severity.overlap', 'owt.severity.hunkOverlap', 'owt.severity.conflict']) {
      assert.deepEqual(props[k]?.enum, ['error', 'warning', 'information', 'hint'], k);
    }
  });

  it('has the Agents view in its own activity bar container, with an icon that exists', () => {
    const container = manifest.contributes.viewsContainers.activitybar.find((c) => c.id === 'owt');
    assert.ok(container);
    assert.ok(fs.existsSync(path.join(EXTENSION_DIR, container.icon)));
    assert.ok(manifest.contributes.views.owt?.some((v) => v.id === 'owt.agents'));
  });
});
