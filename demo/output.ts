// How the demo talks: in a terminal, a screen redrawn about once a second (how to reach the cluster, the
// status table, the latest steps); otherwise (a pipe, a log, --once) plain lines — each step, and a table row
// whenever a node's row changes.

import {
  LEGEND,
  statusHeader,
  autoscalerLines,
  clusterHealthLine,
  formatTable,
  renderStatus,
  statusCells,
  visibleLength,
  type NodeStatus,
} from './view.ts';
import type { Snapshot } from './observer.ts';

export interface Output {
  /** A narrative line. */
  say(line: string): void;
  /** Lines shown above the table (how to use kubectl against the demo). */
  setHeader(lines: string[]): void;
  /** Starts showing the status table. */
  live(): void;
  snapshot(snapshot: Snapshot): void;
  /** Stops redrawing; later lines are printed plainly. */
  close(): void;
}

function elapsed(startMs: number): string {
  const s = Math.floor((Date.now() - startMs) / 1000);
  return `+${s}s`.padStart(5);
}

/** What makes a row worth printing again (not its age or how long the agent has been silent). */
function rowKey(status: NodeStatus): string {
  const silent =
    status.heartbeatAgeSeconds !== undefined &&
    status.heartbeatDurationSeconds !== undefined &&
    status.heartbeatAgeSeconds > status.heartbeatDurationSeconds;
  return JSON.stringify([
    status.nodeClaim,
    status.state,
    status.taints,
    status.condition?.status,
    status.condition?.reason,
    status.heartbeatAgeSeconds === undefined ? 'none' : silent,
    status.extensions.map((e) => [e.name, e.state, e.reason]),
  ]);
}

/** Plain lines: for pipes, logs and --once. */
export class LineOutput implements Output {
  private readonly startMs = Date.now();
  private readonly rows = new Map<string, string>();
  private health: string | undefined;
  private autoscaler: string | undefined;
  private isLive = false;
  private readonly write: (text: string) => void;

  constructor(write: (text: string) => void = (text) => void process.stdout.write(text)) {
    this.write = write;
  }

  say(line: string): void {
    this.write(`${elapsed(this.startMs)}  ${line}\n`);
  }

  setHeader(lines: string[]): void {
    for (const line of lines) this.write(`${line}\n`);
  }

  live(): void {
    if (!this.isLive) this.write(`${LEGEND}\n`);
    this.isLive = true;
  }

  snapshot(snapshot: Snapshot): void {
    if (!this.isLive) return;
    const health = clusterHealthLine(snapshot.clusterHealth);
    if (health !== this.health) {
      this.health = health;
      this.write(`${elapsed(this.startMs)}  │ ${health}\n`);
    }
    const lines = autoscalerLines(snapshot.nodeClaims, snapshot.noWorkload ? undefined : snapshot.pods);
    if (lines.join('\n') !== this.autoscaler) {
      this.autoscaler = lines.join('\n');
      for (const line of lines) this.write(`${elapsed(this.startMs)}  │ ${line}\n`);
    }
    const changed = snapshot.statuses.filter((s) => this.rows.get(s.name) !== rowKey(s));
    if (changed.length === 0) return;
    for (const s of changed) this.rows.set(s.name, rowKey(s));
    const options = { claimsColumn: snapshot.nodeClaims !== undefined };
    const table = formatTable([statusHeader(options), ...changed.map((s) => statusCells(s, options))]);
    const prefix = elapsed(this.startMs);
    this.write(`${prefix}  │ ${table[0]}\n`);
    for (const line of table.slice(1)) this.write(`${' '.repeat(prefix.length)}  │ ${line}\n`);
  }

  close(): void {
    this.isLive = false;
  }
}

/** Cuts a line to the terminal's width, keeping its colour escapes intact. */
function fit(line: string, width: number): string {
  if (visibleLength(line) <= width) return line;
  let out = '';
  let shown = 0;
  // eslint-disable-next-line no-control-regex
  for (const part of line.split(/(\u001b\[[0-9;]*m)/)) {
    if (part.startsWith('\u001b[')) {
      out += part;
      continue;
    }
    for (const ch of part) {
      if (shown >= width - 1) return `${out}…\u001b[0m`;
      out += ch;
      shown++;
    }
  }
  return out;
}

/** Wraps plain text at spaces to `width`, continuation lines indented by `indent`. */
export function wrap(line: string, width: number, indent: number): string[] {
  const out: string[] = [];
  let rest = line;
  let prefix = '';
  while (prefix.length + rest.length > width) {
    const room = width - prefix.length;
    let cut = rest.lastIndexOf(' ', room);
    if (cut <= 0) cut = room;
    out.push(prefix + rest.slice(0, cut));
    rest = rest.slice(cut).trimStart();
    prefix = ' '.repeat(indent);
  }
  out.push(prefix + rest);
  return out;
}

/** A terminal screen redrawn in place about once a second. */
export class TtyOutput implements Output {
  private readonly startMs = Date.now();
  private header: string[] = [];
  private readonly recent: string[] = [];
  private latest: Snapshot | undefined;
  private timer: NodeJS.Timeout | undefined;
  private drawn = false;
  private readonly stream: NodeJS.WriteStream;
  private readonly keepLines: number;

  constructor(stream: NodeJS.WriteStream = process.stdout, keepLines = 30) {
    this.stream = stream;
    this.keepLines = keepLines;
  }

  say(line: string): void {
    const text = `${elapsed(this.startMs)}  ${line}`;
    if (!this.timer) {
      this.stream.write(`${text}\n`);
      return;
    }
    this.recent.push(text);
    if (this.recent.length > this.keepLines) this.recent.splice(0, this.recent.length - this.keepLines);
    this.draw();
  }

  setHeader(lines: string[]): void {
    this.header = lines;
    if (!this.timer) for (const line of lines) this.stream.write(`${line}\n`);
  }

  live(): void {
    if (this.timer) return;
    this.stream.write('\u001b[?25l'); // hide the cursor while redrawing
    this.timer = setInterval(() => this.draw(), 1000);
    this.draw();
  }

  snapshot(snapshot: Snapshot): void {
    this.latest = snapshot;
    if (this.timer) this.draw();
  }

  private draw(): void {
    const width = Math.max(40, this.stream.columns || 120);
    const height = Math.max(15, this.stream.rows || 40);
    const table = this.latest
      ? renderStatus(this.latest.nodes, this.latest.leases, new Date(), {
          color: true,
          width,
          nodeClaims: this.latest.nodeClaims,
          claimsColumn: this.latest.nodeClaims !== undefined,
        })
      : ['(waiting for the first look at the cluster…)'];
    const top = [
      ...this.header.flatMap((line) => wrap(line, width, 4)),
      '',
      ...table.map((line) => fit(line, width)),
      ...(this.latest
        ? autoscalerLines(
            this.latest.nodeClaims,
            this.latest.noWorkload ? undefined : this.latest.pods,
          ).flatMap((line) => wrap(line, width, 4))
        : []),
      ...(this.latest ? wrap(clusterHealthLine(this.latest.clusterHealth, true), width, 4) : []),
      ...wrap(`\u001b[2m${LEGEND}\u001b[0m`, width, 4),
      '',
      '\u001b[1mWhat is happening\u001b[0m',
    ];
    // The newest steps that fit below the table, long ones wrapped under their text.
    const steps = this.recent
      .flatMap((line) => wrap(line, width, 7))
      .slice(-Math.max(3, height - top.length - 1));
    const lines = [...top, ...steps].map((line) => `${line}\u001b[K`);
    // First frame: clear the screen; later frames: overwrite from the top (no flicker).
    const start = this.drawn ? '\u001b[H' : '\u001b[2J\u001b[H';
    this.drawn = true;
    this.stream.write(`${start}${lines.join('\n')}\n\u001b[J`);
  }

  /** Stops redrawing and leaves the last frame on screen. */
  close(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.draw();
    this.stream.write('\u001b[?25h');
  }
}
