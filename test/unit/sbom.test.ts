// release/sbom.ts's reading of dpkg's status file: which paragraphs are installed packages, and their fields.

import { describe, expect, it } from 'vitest';
import { installedDebianPackages } from '../../release/sbom.ts';

const STATUS = `Package: zlib1g
Status: install ok installed
Priority: optional
Architecture: amd64
Multi-Arch: same
Source: zlib
Version: 1:1.2.13.dfsg-1
Description: compression library - runtime
 zlib is a library implementing the deflate compression method found
 in gzip and PKZIP.

Package: base-files
Essential: yes
Status: install ok installed
Architecture: amd64
Version: 12.4+deb12u13

Package: removed-one
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: libgcc-s1
Status: install ok installed
Architecture: amd64
Source: gcc-12 (12.2.0-14+deb12u1)
Version: 12.2.0-14+deb12u1

Package: tzdata
Status: install ok installed
Architecture: all
Source: tzdata
Version: 2025b-0+deb12u2
`;

describe('installedDebianPackages', () => {
  it('lists the installed packages sorted, with source packages that differ from the name', () => {
    expect(installedDebianPackages(STATUS)).toEqual([
      { name: 'base-files', version: '12.4+deb12u13', architecture: 'amd64' },
      { name: 'libgcc-s1', version: '12.2.0-14+deb12u1', architecture: 'amd64', source: 'gcc-12' },
      { name: 'tzdata', version: '2025b-0+deb12u2', architecture: 'all' },
      { name: 'zlib1g', version: '1:1.2.13.dfsg-1', architecture: 'amd64', source: 'zlib' },
    ]);
  });

  it('leaves out what is not installed and paragraphs without a version or architecture', () => {
    expect(installedDebianPackages('Package: half\nStatus: install ok installed\n\n')).toEqual([]);
    expect(installedDebianPackages(STATUS).map((p) => p.name)).not.toContain('removed-one');
    expect(installedDebianPackages('')).toEqual([]);
  });
});
