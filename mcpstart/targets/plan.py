"""Which servers a run measures: the reference recipes, or the servers named by ``-- COMMAND``,
``--server NAME=COMMAND`` and ``--config FILE``, filtered by
``--only``, plus the C floor server with ``--floor``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .cmdline import Skipped, Target, launch_notes, parse_server_option, server_name
from .recipes import Recipe, RecipeError, load_recipes

FLOOR = "c"
"""The recipe of the floor server: a minimal MCP server in C."""
HTTP_FLOOR = "c-http"
"""Its Streamable HTTP sibling: the HTTP rows' floor and the load engine's ceiling."""
TRANSPORTS = ("stdio", "http", "both")


class PlanError(ValueError):
    """Input that names no measurable set of servers (a usage error: exit 2)."""


@dataclass
class Plan:
    """What a run measures, in order: ``recipes`` to build, ``targets`` to spawn as they
    are, ``skipped`` config entries (each a row with its reason), ``notes`` for the user,
    and ``together``: several servers named by the user, as an editor starts them, so the
    all-at-once startup is measured too."""

    recipes: list[Recipe] = field(default_factory=list)
    ceiling: Recipe | None = None
    """The HTTP floor, built only to measure the load engine's ceiling (not a row), when
    HTTP servers get load and the floor is not one of them."""
    targets: list[Target] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    together: bool = False

    @property
    def names(self) -> list[str]:
        return ([r.name for r in self.recipes] + [t.name for t in self.targets]
                + [s.name for s in self.skipped])

    @property
    def secrets(self) -> set[str]:
        """Every value the targets must never show (their env values and substitutions)."""
        return {s for t in self.targets for s in t.secrets}


def parse_headers(values: tuple[str, ...]) -> dict[str, str]:
    """``--header`` values (``Name: value``, as curl's ``-H``) as a dict, in order.

    Raises:
        PlanError: a value without a colon, with an empty or invalid name, or with a character
            a header field cannot carry (http1.request_head's rule); the value is never shown.
    """
    from ..transports.http1 import request_head

    headers = {}
    for value in values:
        name, colon, rest = value.partition(":")
        try:
            if not colon:
                raise ValueError("no colon")
            request_head("GET", "/", [(name.strip(), rest.strip())])
        except ValueError:
            shown = f" {name.strip()[:40]!r}" if colon else ""  # without a colon it may all be secret
            raise PlanError(f"--header{shown}: give it as 'Name: value', a "
                            "token for the name, no control character or line break in the "
                            "value") from None
        headers[name.strip()] = rest.strip()
    return headers


def make_plan(command: tuple[str, ...], server_specs: tuple[str, ...],
              configs: tuple[str, ...], client: str | None, name: str | None,
              cwd: str | None, only: tuple[str, ...], floor: bool,
              recipe_folder: Callable[[], Path], inputs: dict[str, str] | None = None,
              *, sdk: tuple[str, ...] = (), pre: bool = False, transport: str = "stdio",
              url: str | None = None, remote: bool = False, load: bool = False,
              load_named: bool = False, endpoint: str | None = None,
              headers: tuple[str, ...] = ()) -> Plan:
    """The plan for one run; ``recipe_folder()`` is asked only when recipes are needed;
    ``inputs`` give VS Code's ``${input:ID}`` values (masked like secrets); ``sdk`` are
    ``--sdk LANG=SPEC`` values, each recipe's variants placed after it (targets/variants.py,
    ``pre``: ranges and latest take pre-releases). ``only`` keeps a recipe's variants with it
    (``python`` keeps ``python@2.1.1``), or names one variant. ``transport`` picks the
    reference recipes ("stdio", "http", "both"; the floor likewise); ``url`` a Streamable
    HTTP server already running (load only on loopback, or with ``load_named``: --load-s
    given); ``remote`` measures a config's HTTP entries too (never loaded unless on
    loopback); ``load``: HTTP servers get load, so the HTTP floor is built for the ceiling;
    ``endpoint``: the MCP endpoint's path of the ``-- COMMAND`` and ``--server`` commands
    spawned over HTTP (``{port}`` in their argv; None: /mcp); ``headers``: ``--header
    'Name: value'`` values, sent with every request to each HTTP server of the run (over a
    config entry's header of the same name; their values are secrets).

    Raises:
        PlanError: a bad --server, a duplicate name, an --only name nothing has, --name
            without a command, an unreadable config or recipe, a bad URL, an --sdk that
            names no variant or is given with servers that are not the reference set,
            an --endpoint with no command spawned over HTTP, a --header that is not
            "Name: value".
    """
    from ..endpoint import Endpoint, is_loopback
    from .configs import ConfigError, load_config
    from .variants import VariantError, with_variants

    plan = Plan()
    if transport not in TRANSPORTS:
        raise PlanError(f"--transport must be one of {', '.join(TRANSPORTS)}")
    if url is not None:
        try:
            at = Endpoint.parse(url)
        except ValueError as err:
            raise PlanError(f"--url {err}") from err
        plan.targets.append(Target(name or f"{at.host}:{at.port}", [], url=url,
                                   load_allowed=is_loopback(at.host) or load_named))
    if name is not None and not command and url is None:
        raise PlanError("--name names the server given after --; there is none")
    if name is not None and not name.strip():
        raise PlanError("--name is empty")
    named_here = [(name or server_name(list(command)), list(command))] if command else []
    for spec in server_specs:
        try:
            named_here.append(parse_server_option(spec))
        except ValueError as err:
            raise PlanError(str(err)) from err
    for target_name, argv in named_here:
        target = Target(target_name, argv, cwd, notes=launch_notes(argv))
        if endpoint is not None and target.transport == "http":
            target = replace(target, endpoint_path=endpoint)
        plan.targets.append(target)
    if endpoint is not None and not any(t.transport == "http" for t in plan.targets if t.argv):
        raise PlanError("--endpoint is the MCP endpoint's path of a server spawned over HTTP "
                        "(-- COMMAND or --server with {port} in its argv); none is named")
    for config in configs:
        try:
            found = load_config(config, client, inputs=inputs, remote=remote)
        except ConfigError as err:
            raise PlanError(str(err)) from err
        if not found.targets and not found.skipped:
            raise PlanError(f"{config}: no MCP servers in it (read as a {found.client} config; "
                            "--client NAME reads it as another client's)")
        taken = set(plan.names)  # a name two configs share gets its client: "fs@zed"
        for entries, more in ((plan.targets, found.targets), (plan.skipped, found.skipped)):
            entries += [replace(e, name=f"{e.name}@{found.client}") if e.name in taken else e
                        for e in more]
        plan.notes += [f"{config}: {note}" for note in found.notes]
    given = parse_headers(headers)
    if given:
        plan.targets = [replace(t, headers={**t.headers, **given},
                                secrets=t.secrets | set(given.values()))
                        if t.transport == "http" else t for t in plan.targets]
    named = bool(command or server_specs or configs or url)
    if named and sdk:
        raise PlanError("--sdk builds the reference servers at other SDK versions; it does "
                        "not apply to -- COMMAND, --server, --config or --url")
    kinds = ("stdio", "http") if transport == "both" else (transport,)
    try:
        if not named:
            plan.recipes = [r for kind in kinds for r in load_recipes(
                recipe_folder(), transport=kind, keep_broken=True)]
        elif floor:
            plan.recipes = load_recipes(recipe_folder(), [{"stdio": FLOOR, "http": HTTP_FLOOR}[k]
                                                          for k in kinds], keep_broken=True)
        if sdk:
            plan.recipes, notes = with_variants(plan.recipes, sdk, pre)
            plan.notes += notes
    except (RecipeError, VariantError) as err:
        raise PlanError(str(err)) from err
    seen: set[str] = set()
    for item in plan.names:
        if item in seen:
            raise PlanError(f"two servers are named {item!r}; give one another name "
                            "(--server NAME=COMMAND, --name)")
        seen.add(item)
    if only:
        unknown = [n for n in only if n not in seen]
        if unknown:
            other = ("; beside servers you name, the reference set is not measured (--floor "
                     "adds the C floor)") if named else "" if transport == "both" else (
                "; the Streamable HTTP ones (c-http, ...) with --transport http or both"
                if transport == "stdio" else "; the stdio ones with --transport stdio or both")
            raise PlanError(f"no server named {', '.join(unknown)}; known: "
                            f"{', '.join(plan.names)}{other}")
        plan.recipes = [r for r in plan.recipes if r.name in only
                        or r.name.split("@", 1)[0] in only]
        plan.targets = [t for t in plan.targets if t.name in only]
        plan.skipped = [s for s in plan.skipped if s.name in only]
    plan.together = named and len([t for t in plan.targets if t.transport == "stdio"]) > 1
    http = any(r.transport == "http" for r in plan.recipes) or any(
        t.transport == "http" and t.load_allowed for t in plan.targets)
    if load and http and HTTP_FLOOR not in [r.name for r in plan.recipes]:
        try:
            [plan.ceiling] = load_recipes(recipe_folder(), [HTTP_FLOOR])
        except RecipeError as err:
            plan.notes.append(f"no load ceiling: {err}")
    return plan
