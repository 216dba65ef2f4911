// A loop over files: which files changed most often in the last commits? Reads the commit log,
// then every commit's patch, and counts the files each one touches. Hundreds of lines of log and
// diff stay in the sandbox; the LLM gets a short ranking.
//
// allowedTools: ["mcp__git__git_log", "mcp__git__git_show"]

const REPO = "/path/to/your/repository";
const COMMITS = 20;

const log = String(await callMCPTool("git", "git_log", { repo_path: REPO, max_count: COMMITS }));
const hashes = [...log.matchAll(/^Commit: ([0-9a-f]{40})/gm)].map((m) => m[1]);

const touched = new Map<string, number>();
for (const hash of hashes) {
  const patch = String(await callMCPTool("git", "git_show", { repo_path: REPO, revision: hash }));
  // `--- a/<path>` and `+++ b/<path>` name the file on each side of a change.
  const files = new Set([...patch.matchAll(/^(?:---|\+\+\+) [ab]\/(.+)$/gm)].map((m) => m[1]));
  for (const file of files) touched.set(file, (touched.get(file) ?? 0) + 1);
}

const ranking = [...touched.entries()]
  .map(([file, commits]) => ({ file, commits }))
  .sort((a, b) => b.commits - a.commits || a.file.localeCompare(b.file));
for (const { file, commits } of ranking) console.log(`${String(commits).padStart(3)}  ${file}`);
return { commits: hashes.length, files: Object.fromEntries(ranking.map((r) => [r.file, r.commits])) };
