/**
 * A LibreOffice that takes its files after it has started: the standby process of a batch (`LibreOfficeRecalc`). A
 * `--convert-to` process is handed its files when it starts, so a file that every process of a batch is held from
 * (two hung files around it) used to wait for a helper's whole start-up (about half a second). The standby is a
 * spare started ahead (with the first model-written file, and after a batch that used one). It runs the Basic macro
 * below from its own profile copy (application Basic, started from the command line, which the profile's
 * `DisableMacrosExecution` and `MacroSecurityLevel` 3, set for the workbooks' own macros, do not stop), and converts
 * `x1.xlsx`, `x2.xlsx`, … as each appears in its input folder, one at a time, the way `--convert-to` does: loaded
 * hidden into Calc (a spreadsheet's `DocumentService`, as `--calc` asks), saved with the "Calc MS Excel 2007 XML"
 * filter (every part of the file as `--convert-to` writes it but its save time, checked in libreoffice-hang.test.ts).
 * Each output is written under a dot name and renamed into place. A file it cannot load or save ends its macro
 * (`SERVE_FAILED`).
 * The host hands the next file only once the last one is out, so the jail never holds more than the file being
 * converted.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** Where the macro's module lives in a profile folder: it replaces the profile's empty `Standard.Module1`. */
export const SERVE_MODULE_PATH = "user/basic/Standard/Module1.xba";

/** What a standby writes in its output folder once its macro runs. */
export const SERVE_READY = "ready";

/**
 * What a standby writes in its output folder when a file fails (LibreOffice cannot load it as a spreadsheet, or cannot
 * save it): its macro has stopped, so the host stops the process, and the file is left to the batch's other processes,
 * like a file `--convert-to` writes nothing for.
 */
export const SERVE_FAILED = "failed";

/** The macro's module (the file at SERVE_MODULE_PATH). */
export const SERVE_MODULE = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">
<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" script:language="StarBasic">
Sub BenchmaxServe(inDir As String, outDir As String)
  Dim load(1) As New com.sun.star.beans.PropertyValue
  load(0).Name = "Hidden"
  load(0).Value = True
  load(1).Name = "DocumentService"
  load(1).Value = "com.sun.star.sheet.SpreadsheetDocument"
  Dim store(0) As New com.sun.star.beans.PropertyValue
  store(0).Name = "FilterName"
  store(0).Value = "Calc MS Excel 2007 XML"
  Dim k As Long
  Dim doc As Object
  Dim f As String
  On Error GoTo failed
  Open outDir &amp; "/${SERVE_READY}" For Output As #1
  Close #1
  k = 1
  Do
    f = inDir &amp; "/x" &amp; k &amp; ".xlsx"
    If FileExists(f) Then
      doc = StarDesktop.loadComponentFromURL(ConvertToURL(f), "_blank", 0, load())
      doc.storeToURL(ConvertToURL(outDir &amp; "/.x" &amp; k &amp; ".xlsx"), store())
      doc.close(True)
      Name outDir &amp; "/.x" &amp; k &amp; ".xlsx" As outDir &amp; "/x" &amp; k &amp; ".xlsx"
      k = k + 1
    Else
      Wait 50
    End If
  Loop
failed:
  On Error Resume Next
  Open outDir &amp; "/${SERVE_FAILED}" For Output As #2
  Close #2
  doc.close(True)
End Sub
</script:module>
`;

/** The name of the k-th file (from 1) handed to a standby, in its input folder and in its output folder. */
export const serveName = (k: number): string => `x${k}.xlsx`;

/** The command-line argument that runs the macro on `inDir` and `outDir` (paths without `"`, `,` or `)`). */
export function serveMacroUrl(inDir: string, outDir: string): string {
  return `macro:///Standard.Module1.BenchmaxServe("${inDir}","${outDir}")`;
}

/** Whether a folder can be named in the macro's URL. */
export const servePathOk = (p: string): boolean => !/[",()\n]/.test(p);

/** Install the macro into a profile folder (a standby's own copy of the profile template; the jail copies it). */
export function installServeMacro(profile: string): void {
  const file = join(profile, SERVE_MODULE_PATH);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, SERVE_MODULE);
}
