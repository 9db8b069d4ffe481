// The release's SBOM (release/release.sh): npm's SPDX document of the production npm packages, completed
// with what else the image carries, per platform — the Debian packages dpkg lists as installed in the
// runtime base (read from /var/lib/dpkg/status in the image's layers, nothing run) and the Node.js binary —
// under one package per platform image, named by its manifest digest. A scanner reading the SBOM then sees
// every package a CVE could be filed against, not only the JavaScript ones.
//   node release/sbom.ts <npm SPDX json> <OCI archive> <node version>   (the document on stdout)

import { readFileSync } from 'node:fs';
import { readImage, readImageIndex, type ImageContents } from '../test/image/image.ts';

interface SpdxPackage {
  name: string;
  SPDXID: string;
  versionInfo: string;
  downloadLocation: string;
  filesAnalyzed: boolean;
  supplier?: string;
  primaryPackagePurpose?: string;
  externalRefs?: Array<{ referenceCategory: string; referenceType: string; referenceLocator: string }>;
  [field: string]: unknown;
}
interface SpdxDocument {
  documentDescribes: string[];
  packages: SpdxPackage[];
  relationships: Array<{ spdxElementId: string; relatedSpdxElement: string; relationshipType: string }>;
  [field: string]: unknown;
}

export interface DebianPackage {
  name: string;
  version: string;
  architecture: string;
  /** The source package, where it differs from the binary's name (purl's `upstream`). */
  source?: string;
}

const DPKG_STATUS = 'var/lib/dpkg/status';
const OS_RELEASE = ['etc/os-release', 'usr/lib/os-release'];

/** The packages of a dpkg status file whose Status says installed, sorted by name. */
export function installedDebianPackages(status: string): DebianPackage[] {
  const packages: DebianPackage[] = [];
  for (const paragraph of status.split(/\n\s*\n/)) {
    const field = (name: string): string | undefined =>
      new RegExp(`^${name}: *(.*)$`, 'm').exec(paragraph)?.[1]?.trim();
    const [name, version, architecture] = [field('Package'), field('Version'), field('Architecture')];
    if (!name || !version || !architecture) continue;
    if (!/ installed$/.test(field('Status') ?? '')) continue;
    const source = field('Source')?.split(' ')[0];
    packages.push({ name, version, architecture, ...(source && source !== name ? { source } : {}) });
  }
  return packages.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `ID-VERSION_ID` of the image's os-release (`debian-12`), for purl's `distro`. */
function distroOf(image: ImageContents): string {
  for (const path of OS_RELEASE) {
    const text = image.files.get(path)?.data?.toString('utf8');
    if (!text) continue;
    const value = (key: string): string =>
      (new RegExp(`^${key}=(.*)$`, 'm').exec(text)?.[1] ?? '').replace(/^"|"$/g, '');
    if (value('ID')) return [value('ID'), value('VERSION_ID')].filter(Boolean).join('-');
  }
  throw new Error('the image has no os-release (etc/os-release, usr/lib/os-release)');
}

const purlRef = (locator: string) => ({
  referenceCategory: 'PACKAGE-MANAGER',
  referenceType: 'purl',
  referenceLocator: locator,
});
/** SPDX IDs allow letters, digits, `.` and `-`. */
const spdxId = (...parts: string[]): string => `SPDXRef-${parts.join('-').replace(/[^A-Za-z0-9.-]/g, '.')}`;

/** npm's document with each platform image, its Debian packages and its Node.js added. */
export async function imageSbom(
  npm: SpdxDocument,
  archive: string,
  nodeVersion: string,
): Promise<SpdxDocument> {
  const doc: SpdxDocument = structuredClone(npm);
  const root = doc.documentDescribes[0];
  if (!root) throw new Error('the npm SBOM describes no package');
  const index = await readImageIndex(archive);
  const name = index.ref.replace(/:[^/:]*$/, '') || 'nodecare';
  for (const { platform, digest } of index.platforms) {
    const image = await readImage(archive, platform, [DPKG_STATUS, ...OS_RELEASE]);
    const arch = platform.split('/')[1]!;
    const status = image.files.get(DPKG_STATUS)?.data;
    if (!status) throw new Error(`the ${platform} image has no ${DPKG_STATUS}`);
    const distro = distroOf(image);
    const debs = installedDebianPackages(status.toString('utf8'));
    if (debs.length === 0)
      throw new Error(`the ${platform} image's ${DPKG_STATUS} lists no installed package`);
    const imageId = spdxId('Image', arch);
    doc.packages.push({
      name: `${name} (${platform})`,
      SPDXID: imageId,
      versionInfo: digest,
      downloadLocation: 'NOASSERTION',
      filesAnalyzed: false,
      primaryPackagePurpose: 'CONTAINER',
      externalRefs: [
        purlRef(
          `pkg:oci/${encodeURIComponent(name.split('/').at(-1)!)}@${encodeURIComponent(digest)}?arch=${arch}`,
        ),
      ],
    });
    doc.documentDescribes.push(imageId);
    doc.relationships.push(
      { spdxElementId: 'SPDXRef-DOCUMENT', relatedSpdxElement: imageId, relationshipType: 'DESCRIBES' },
      { spdxElementId: imageId, relatedSpdxElement: root, relationshipType: 'CONTAINS' },
    );
    const nodeId = spdxId('Node.js', nodeVersion, arch);
    doc.packages.push({
      name: 'node',
      SPDXID: nodeId,
      versionInfo: nodeVersion,
      downloadLocation: 'NOASSERTION',
      filesAnalyzed: false,
      supplier: 'Organization: OpenJS Foundation',
      primaryPackagePurpose: 'APPLICATION',
      externalRefs: [purlRef(`pkg:generic/node@${nodeVersion}?arch=${arch}`)],
    });
    doc.relationships.push({
      spdxElementId: imageId,
      relatedSpdxElement: nodeId,
      relationshipType: 'CONTAINS',
    });
    for (const deb of debs) {
      const id = spdxId('Deb', deb.name, deb.version, deb.architecture, arch);
      const qualifiers = `arch=${deb.architecture}&distro=${distro}${deb.source ? `&upstream=${encodeURIComponent(deb.source)}` : ''}`;
      doc.packages.push({
        name: deb.name,
        SPDXID: id,
        versionInfo: deb.version,
        downloadLocation: 'NOASSERTION',
        filesAnalyzed: false,
        supplier: 'Organization: Debian',
        externalRefs: [
          purlRef(`pkg:deb/debian/${deb.name}@${encodeURIComponent(deb.version)}?${qualifiers}`),
        ],
      });
      doc.relationships.push({
        spdxElementId: imageId,
        relatedSpdxElement: id,
        relationshipType: 'CONTAINS',
      });
    }
  }
  return doc;
}

if (import.meta.main) {
  const [npmFile, archive, nodeVersion] = process.argv.slice(2);
  if (!npmFile || !archive || !nodeVersion) {
    process.stderr.write('usage: node release/sbom.ts <npm SPDX json> <OCI archive> <node version>\n');
    process.exit(2);
  }
  try {
    const npm = JSON.parse(readFileSync(npmFile, 'utf8')) as SpdxDocument;
    process.stdout.write(`${JSON.stringify(await imageSbom(npm, archive, nodeVersion), null, 2)}\n`);
  } catch (err) {
    process.stderr.write(`release/sbom.ts: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
