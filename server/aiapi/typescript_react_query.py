"""TanStack React Query hooks for the TypeScript client, when asked (`--react-query`).

openapi-ts's own `@tanstack/react-query` plugin writes them into
src/@tanstack/react-query.gen.ts, with its defaults: per operation a query key, and
`<operation>Options` (queryOptions, for useQuery and the QueryClient) for reads or
`<operation>Mutation` (mutationOptions, for useMutation) for writes, each calling the SDK
function. Nothing here writes a hook; this module names the plugin, the dependency it adds
to the generated package and a README that shows the options in use.
"""

from __future__ import annotations

import re
from pathlib import Path

REACT_QUERY_PLUGIN = "@tanstack/react-query"
REACT_QUERY_RANGE = "^5.108.4"
"""What the generated package.json asks for: the version pinned in server/aiapi/node, which
tsc checks the hooks against, and any later 5.x."""
HOOKS_FILE = Path("src") / "@tanstack" / "react-query.gen.ts"

_EXPORTED = re.compile(r"^export const (\w+?)(Options|Mutation) = ", re.MULTILINE)


def react_query_readme(package_name: str, title: str, folder: Path) -> str:
    """README.md of a client with hooks: install, provider, one query and one mutation of
    this document's own (the first of each the plugin wrote), so the names are real."""
    hooks = (folder / HOOKS_FILE).read_text(encoding="utf-8")
    queries = [m.group(1) for m in _EXPORTED.finditer(hooks) if m.group(2) == "Options"]
    mutations = [m.group(1) for m in _EXPORTED.finditer(hooks) if m.group(2) == "Mutation"]
    from_library = ["QueryClient", "QueryClientProvider"]
    from_library += (["useQuery"] if queries else []) + (["useMutation"] if mutations else [])
    generated = [f"{name}Options" for name in queries[:1]] + [
        f"{name}Mutation" for name in mutations[:1]
    ]
    lines = [
        f"# {package_name}",
        "",
        f"A typed fetch client for {title}, with zod schemas and TanStack React Query",
        "options for each operation (`src/@tanstack/react-query.gen.ts`, written by",
        "@hey-api/openapi-ts's `@tanstack/react-query` plugin): `<operation>Options` for reads,",
        "for `useQuery`, `useSuspenseQuery` and `queryClient.fetchQuery`; `<operation>Mutation`",
        "for writes, for `useMutation`; `<operation>QueryKey` to invalidate a query. Each takes",
        "the options of the SDK function it calls (`path`, `query`, `headers`, `body`).",
        "",
        "```sh",
        "npm install  # zod and @tanstack/react-query; your app brings react",
        "```",
        "",
        "```tsx",
        f"import {{ {', '.join(from_library)} }} from '@tanstack/react-query';",
        "import { client } from './src/client.gen';",
    ]
    if generated:
        lines.append(f"import {{ {', '.join(generated)} }} from './src/@tanstack/react-query.gen';")
    lines += [
        "",
        "client.setConfig({ baseUrl: 'https://api.example.com' });",
        "const queryClient = new QueryClient(); // <QueryClientProvider client={queryClient}>",
    ]
    if queries:
        first = f"{queries[0]}Options"
        lines += [
            "",
            f"function Read(options: Parameters<typeof {first}>[0]) {{",
            f"  const {{ data, error, isPending }} = useQuery({first}(options));",
            "}",
        ]
    if mutations:
        lines += [
            "",
            "function Write() {",
            f"  const {{ mutate, isPending }} = useMutation({mutations[0]}Mutation());",
            "  // mutate({ path, query, body }): the options of the SDK function",
            "}",
        ]
    lines.append("```")
    return "\n".join(lines) + "\n"
