// Where the page is, kept in the URL's hash (`#project=...&session=...`), so that a reload comes back to it.

export interface Place {
  project: string | null;
  session: string | null;
}

export function readPlace(): Place {
  const params = new URLSearchParams(window.location.hash.slice(1));
  return { project: params.get('project'), session: params.get('session') };
}

export function writePlace(place: Place): void {
  const params = new URLSearchParams();
  if (place.project) params.set('project', place.project);
  if (place.project && place.session) params.set('session', place.session);
  const hash = params.toString();
  // replaceState: moving between sessions is not navigation worth a Back step
  window.history.replaceState(null, '', hash ? `#${hash}` : window.location.pathname);
}
