/**
 * A stand-in for the `vscode` module, with just the API surface the extension uses, so that
 * `out/extension.js` can be activated in plain Node (there is no VS Code binary here). The
 * test installs it with `installFakeVscode()` and drives it through `fake`.
 *
 * Every UI call is recorded in `fake.calls`, in order; dialogs are answered by the
 * test-provided `fake.answerModal` / `fake.answerQuickPick` / `fake.answerInputBox`.
 */

import { readFileSync, statSync } from "node:fs";
import Module from "node:module";
import { join, relative } from "node:path";

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): { dispose(): void } => {
    this.listeners.push(listener);
    return {
      dispose: () => {
        this.listeners = this.listeners.filter((l) => l !== listener);
      },
    };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query: string,
  ) {}
  static file(path: string): Uri {
    return new Uri("file", path, "");
  }
  static parse(value: string): Uri {
    const match = /^([a-z][\w+.-]*):\/\/([^?#]*)(?:\?([^#]*))?/i.exec(value);
    if (!match) throw new Error(`not a URI: ${value}`);
    return new Uri(match[1] ?? "", decodeURIComponent(match[2] ?? ""), match[3] ?? "");
  }
  static from(parts: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(parts.scheme, parts.path ?? "", parts.query ?? "");
  }
  static joinPath(base: Uri, ...segments: string[]): Uri {
    return new Uri(base.scheme, join(base.path, ...segments), "");
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}${this.query ? `?${this.query}` : ""}`;
  }
}

export enum FileType {
  Unknown = 0,
  File = 1,
  Directory = 2,
}

export class Range {
  constructor(
    readonly startLine: number,
    readonly startCharacter: number,
    readonly endLine: number,
    readonly endCharacter: number,
  ) {}
}

/** A text editor over a file's text: `selection` is 0-based lines, as VS Code's. */
export interface FakeEditor {
  document: { uri: Uri; getText(range?: Range): string };
  selection: { isEmpty: boolean; start: { line: number; character: number }; end: { line: number; character: number } };
}

export function fakeEditor(path: string, selection?: [number, number]): FakeEditor {
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n");
  const [start, end] = selection ?? [0, 0];
  return {
    document: {
      uri: Uri.file(path),
      getText: (range?: Range) => (range ? lines.slice(range.startLine, range.endLine).map((line) => `${line}\n`).join("") : text),
    },
    selection: { isEmpty: selection === undefined, start: { line: start, character: 0 }, end: { line: end, character: 5 } },
  };
}

export class TabInputTextDiff {
  constructor(
    readonly original: Uri,
    readonly modified: Uri,
  ) {}
}

export interface MessageItem {
  title: string;
  isCloseAffordance?: boolean;
}

export interface ModalCall {
  message: string;
  options: { modal?: boolean; detail?: string };
  items: MessageItem[];
}

interface ContentProvider {
  provideTextDocumentContent(uri: Uri): string;
}

interface WebviewViewProvider {
  resolveWebviewView(view: FakeWebviewView): void;
}

export interface FakeWebviewView {
  visible: boolean;
  webview: {
    options: unknown;
    html: string;
    cspSource: string;
    asWebviewUri(uri: Uri): Uri;
    onDidReceiveMessage: (listener: Listener<unknown>) => { dispose(): void };
    postMessage(message: unknown): Promise<boolean>;
  };
  onDidChangeVisibility: (listener: Listener<undefined>) => { dispose(): void };
  onDidDispose: (listener: Listener<undefined>) => { dispose(): void };
}

export const fake = {
  calls: [] as { kind: string; args: unknown[] }[],
  log: [] as string[],
  configuration: {} as Record<string, unknown>,
  workspaceFolder: "/",
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  contentProviders: new Map<string, ContentProvider>(),
  viewProviders: new Map<string, WebviewViewProvider>(),
  configurationChanged: new EventEmitter<{ affectsConfiguration(section: string): boolean }>(),
  openTabs: [] as { input: TabInputTextDiff }[],
  answerModal: (_call: ModalCall): MessageItem | undefined => undefined,
  answerQuickPick: (items: unknown[]): unknown => items[0],
  answerInputBox: (): string | undefined => undefined,
  focused: true,
  activeTextEditor: undefined as FakeEditor | undefined,

  /** A webview view as VS Code would pass to `resolveWebviewView`, recording posted messages. */
  createWebviewView(): { view: FakeWebviewView; posted: unknown[]; receive: (message: unknown) => void } {
    const posted: unknown[] = [];
    const received = new EventEmitter<unknown>();
    const view: FakeWebviewView = {
      visible: true,
      webview: {
        options: {},
        html: "",
        cspSource: "vscode-webview://fake",
        asWebviewUri: (uri) => Uri.from({ scheme: "vscode-webview", path: uri.path }),
        onDidReceiveMessage: received.event,
        postMessage: (message) => {
          posted.push(message);
          return Promise.resolve(true);
        },
      },
      onDidChangeVisibility: new EventEmitter<undefined>().event,
      onDidDispose: new EventEmitter<undefined>().event,
    };
    return {
      view,
      posted,
      receive: (message) => {
        received.fire(message);
      },
    };
  },
};

function record(kind: string, ...args: unknown[]): void {
  fake.calls.push({ kind, args });
}

/** Like VS Code's: once disposed, every call throws `Channel has been closed`. */
const channel = (name: string): Record<string, unknown> => {
  let disposed = false;
  const validate = (): void => {
    if (disposed) throw new Error("Channel has been closed");
  };
  const write =
    (level: string) =>
    (message: string): void => {
      validate();
      fake.log.push(`${level} ${message}`);
    };
  return {
    name,
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    debug: write("debug"),
    trace: write("trace"),
    appendLine: write("info"),
    show: () => {
      validate();
      record("showLog");
    },
    dispose: () => {
      disposed = true;
      record("disposeLog");
    },
  };
};

export const window = {
  get state() {
    return { focused: fake.focused };
  },
  get activeTextEditor() {
    return fake.activeTextEditor;
  },
  createOutputChannel: (name: string) => channel(name),
  showWarningMessage: (message: string, ...rest: unknown[]): Promise<MessageItem | undefined> => {
    const [first, ...items] = rest;
    if (typeof first === "object" && first !== null && "modal" in first) {
      const call: ModalCall = { message, options: first as ModalCall["options"], items: items as MessageItem[] };
      record("modal", call);
      return Promise.resolve(fake.answerModal(call));
    }
    record("warning", message);
    return Promise.resolve(undefined);
  },
  showInformationMessage: (message: string): Promise<undefined> => {
    record("information", message);
    return Promise.resolve(undefined);
  },
  showInputBox: (): Promise<string | undefined> => Promise.resolve(fake.answerInputBox()),
  showQuickPick: (items: unknown[]): Promise<unknown> => {
    record("quickPick", items);
    return Promise.resolve(fake.answerQuickPick(items));
  },
  registerWebviewViewProvider: (id: string, provider: WebviewViewProvider) => {
    fake.viewProviders.set(id, provider);
    return { dispose: () => fake.viewProviders.delete(id) };
  },
  tabGroups: {
    get all() {
      return [{ tabs: fake.openTabs }];
    },
    close: (tabs: { input: TabInputTextDiff }[]) => {
      record("closeTabs", tabs.map((tab) => tab.input.modified.toString()));
      fake.openTabs = fake.openTabs.filter((tab) => !tabs.includes(tab));
      return Promise.resolve(true);
    },
  },
};

export const workspace = {
  get workspaceFolders() {
    return [{ uri: Uri.file(fake.workspaceFolder) }];
  },
  asRelativePath: (uri: Uri): string => relative(fake.workspaceFolder, uri.fsPath),
  fs: {
    stat: (uri: Uri) => {
      const stat = statSync(uri.fsPath);
      return Promise.resolve({ type: stat.isFile() ? FileType.File : FileType.Directory, size: stat.size });
    },
    readFile: (uri: Uri) => Promise.resolve(new Uint8Array(readFileSync(uri.fsPath))),
  },
  getConfiguration: (section: string) => ({
    get: (key: string): unknown => fake.configuration[`${section}.${key}`],
  }),
  onDidChangeConfiguration: fake.configurationChanged.event,
  registerTextDocumentContentProvider: (scheme: string, provider: ContentProvider) => {
    fake.contentProviders.set(scheme, provider);
    return { dispose: () => fake.contentProviders.delete(scheme) };
  },
};

export const commands = {
  registerCommand: (id: string, handler: (...args: unknown[]) => unknown) => {
    fake.commands.set(id, handler);
    return { dispose: () => fake.commands.delete(id) };
  },
  executeCommand: (id: string, ...args: unknown[]): Promise<unknown> => {
    record(`command:${id}`, ...args);
    if (id === "vscode.diff") {
      const [left, right] = args as [Uri, Uri];
      fake.openTabs.push({ input: new TabInputTextDiff(left, right) });
    }
    const handler = fake.commands.get(id);
    return Promise.resolve(handler ? handler(...args) : undefined);
  },
};

/** Make `require("vscode")` return this module. */
export function installFakeVscode(): void {
  const loader = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const original = loader._resolveFilename.bind(Module);
  loader._resolveFilename = (request: string, ...rest: unknown[]): string => (request === "vscode" ? __filename : original(request, ...rest));
}
