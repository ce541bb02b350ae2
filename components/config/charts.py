"""`vllm-platform:charts`: where every Helm chart comes from (components/cluster/charts.py, docs/addons.md "Charts from a
mirror (air-gapped)").

Unset, each release pulls its pinned chart (components/upstream/versions.py CHARTS) from the chart's own repository. With
`mirror`, every release pulls the same chart name and version from one place instead:
- a classic Helm chart repository, `https://charts.example.com/vllm` (Artifactory, Nexus, ChartMuseum, a static
  `helm repo index` directory served over HTTP): the chart by its name from the repository;
- an OCI registry path, `oci://harbor.example.com/vllm-charts`: the chart at `<mirror>/<name>`;
- a directory of chart archives where `pulumi` runs, `/srv/charts` or `file:///srv/charts`: `<dir>/<name>-<version>.tgz`
  (what `helm pull` writes).
A chart published upstream as OCI (oci://docker.io/envoyproxy/gateway-helm) is looked up by its name (gateway-helm).
The password is never here: it is the secret `chartMirrorPassword` (components/config/load.py checks the pair).
"""
from __future__ import annotations

import posixpath
from typing import Literal
from urllib.parse import unquote, urlsplit

from pydantic import Field, field_validator, model_validator

from .base import _Base, field_error

PASSWORD_KEY = "chartMirrorPassword"
FORMS = ("an http(s):// chart repository URL, an oci://registry/path, or an absolute directory (/srv/charts or "
         "file:///srv/charts)")


def mirror_kind(mirror: str) -> Literal["repo", "oci", "dir"]:
    """repo (a classic chart repository), oci (a registry path) or dir (chart archives on disk), of a valid mirror."""
    scheme = urlsplit(mirror).scheme.lower()
    return "repo" if scheme in ("http", "https") else "oci" if scheme == "oci" else "dir"


def mirror_location(mirror: str) -> str:
    """The mirror as the releases use it: a repository URL as given, an OCI path or a directory without its
    trailing slash, a file:// URL as its path."""
    kind = mirror_kind(mirror)
    if kind == "repo":
        return mirror
    if kind == "dir":
        path = unquote(urlsplit(mirror).path) if mirror.lower().startswith("file:") else mirror
        return posixpath.normpath(path)
    return mirror.rstrip("/")


def _problem(mirror: str) -> str | None:
    """Why `mirror` is not a chart mirror, or None."""
    if not mirror.strip():
        return f"{mirror!r} is empty; give {FORMS}"
    if mirror != mirror.strip():
        return f"{mirror!r} has blanks around it; remove them"
    parts = urlsplit(mirror)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        if not parts.hostname:
            return f"{mirror!r} names no host; e.g. https://charts.example.com/vllm"
        if parts.username or parts.password:
            return (f"{mirror!r} carries credentials in the URL, which would land in the stack's state in plain "
                    f"text; give charts.username and set the password with `pulumi config set --secret "
                    f"{PASSWORD_KEY} ...`")
        if parts.query or parts.fragment:
            return f"{mirror!r} has a query or fragment; a chart repository URL is scheme://host/path"
        return None
    if scheme == "oci":
        if not parts.hostname:
            return f"{mirror!r} names no registry; e.g. oci://harbor.example.com/vllm-charts"
        if parts.username or parts.password or parts.query or parts.fragment:
            return f"{mirror!r}: an OCI mirror is oci://registry[:port]/path, without credentials, query or fragment"
        return None
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            return (f"{mirror!r} names a host ({parts.netloc}); a file:// mirror is a local directory: "
                    f"file:///srv/charts (three slashes)")
        if not parts.path.startswith("/"):
            return f"{mirror!r} is not an absolute path; e.g. file:///srv/charts"
        return None
    if mirror.startswith("/"):
        return None
    if "://" in mirror or (scheme and len(scheme) > 1):  # c:/..., a one-letter scheme, is a relative path here
        return f"{mirror!r}: scheme {scheme}:// is not a chart mirror; give {FORMS}"
    return (f"{mirror!r} is a relative path; give an absolute directory (/srv/charts or file:///srv/charts): the "
            f"Kubernetes provider resolves a chart path against its own working directory, not the stack file's")


class ChartSettings(_Base):
    mirror: str | None = Field(
        None, description="where every Helm chart comes from instead of its own repository, at the pinned name "
                          "and version: " + FORMS)
    username: str | None = Field(
        None, min_length=1, description="user of a private mirror (HTTP basic auth, or the OCI registry's login); "
                                        f"its password is the secret {PASSWORD_KEY}")
    ca_file: str | None = Field(
        None, min_length=1, description="absolute path, where `pulumi` runs, of the CA bundle that signed the "
                                        "mirror's TLS certificate (a private CA)")

    @field_validator("mirror")
    @classmethod
    def _mirror(cls, v):
        problem = _problem(v) if v is not None else None
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("ca_file")
    @classmethod
    def _absolute(cls, v):
        if v is not None and not v.startswith("/"):
            raise ValueError(f"{v!r} is a relative path; give the CA bundle's absolute path where `pulumi` runs, "
                             f"e.g. /etc/ssl/certs/corp-ca.pem")
        return v

    @model_validator(mode="after")
    def _fits_mirror(self):
        given = [(name, key) for name, key in (("username", "username"), ("ca_file", "caFile"))
                 if getattr(self, name) is not None]
        if given and self.mirror is None:
            raise field_error(given[0][1], "given without charts.mirror; set the mirror it belongs to, or remove it")
        if self.kind == "dir" and given:
            raise field_error(given[0][1], "a directory mirror is read from disk, with no login or TLS; remove it")
        if self.kind == "repo" and self.username is not None and self.mirror.lower().startswith("http://"):
            raise field_error("username", f"{self.mirror!r} is plain http: the login (charts.username and the secret "
                                          f"{PASSWORD_KEY}) would cross the network in clear text; use the "
                                          "mirror's https:// URL")
        if self.kind == "oci" and self.ca_file is not None and self.username is None:
            # pulumi-kubernetes (helm_release.go getChart, since v4.27) builds a registry client with the CA file
            # only together with the login; otherwise its default client, which trusts the system's CAs
            raise field_error("caFile", "with an oci:// mirror the CA file is used only together with a login "
                                        f"(charts.username and the secret {PASSWORD_KEY}); add them, or add the CA "
                                        "to the system trust store where `pulumi` runs and remove caFile")
        return self

    @property
    def kind(self) -> Literal["repo", "oci", "dir"] | None:
        return mirror_kind(self.mirror) if self.mirror is not None else None

    @property
    def location(self) -> str | None:
        return mirror_location(self.mirror) if self.mirror is not None else None
