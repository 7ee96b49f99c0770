/* Appends the checksum trailer that KilnModuleLoadFromFile verifies to each module file named on
 * the command line, as kiln's exporter does after linking: kiln_seal_module FILE.so ... */
#include <stdio.h>

#include "kiln/runtime/c_runtime_api.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (KilnModuleFileSeal(argv[i]) != 0) {
      fprintf(stderr, "%s\n", KilnGetLastError());
      return 1;
    }
  }
  return 0;
}
